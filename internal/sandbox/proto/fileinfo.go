package proto

import (
	"io/fs"
	"time"
)

// InfoOf describes st for the wire; p is its path for walk (else "").
func InfoOf(p string, st fs.FileInfo) WireInfo {
	return WireInfo{Path: p, Name: st.Name(), Size: st.Size(), Mode: st.Mode(), ModTime: st.ModTime()}
}

// FileInfo is a WireInfo seen as an fs.FileInfo and fs.DirEntry.
type FileInfo struct{ W WireInfo }

var (
	_ fs.FileInfo = FileInfo{}
	_ fs.DirEntry = FileInfo{}
)

func (f FileInfo) Name() string               { return f.W.Name }
func (f FileInfo) Size() int64                { return f.W.Size }
func (f FileInfo) Mode() fs.FileMode          { return f.W.Mode }
func (f FileInfo) ModTime() time.Time         { return f.W.ModTime }
func (f FileInfo) IsDir() bool                { return f.W.Mode.IsDir() }
func (f FileInfo) Sys() any                   { return nil }
func (f FileInfo) Type() fs.FileMode          { return f.W.Mode.Type() }
func (f FileInfo) Info() (fs.FileInfo, error) { return f, nil }
func (f FileInfo) String() string             { return fs.FormatFileInfo(f) }
