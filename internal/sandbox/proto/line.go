package proto

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ReadLine returns the next line without its end, or tooLong when it is
// longer than max (the line is then consumed and dropped). Both ends of the
// protocol read with it.
func ReadLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > max+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) && (len(buf) > 0 || tooLong) {
				return bytes.TrimRight(buf, "\r\n"), tooLong, nil
			}
			return nil, false, err
		}
		return bytes.TrimRight(buf, "\r\n"), tooLong, nil
	}
}
