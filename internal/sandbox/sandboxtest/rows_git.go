package sandboxtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wardenhq/warden/internal/testenv"
)

// hostGit runs git on the host in dir as the user's own git would: none of
// warden's hardening, no system or global configuration, any owner.
func hostGit(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(testenv.Need(t, "git")[0], append([]string{"-C", dir}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_COUNT=4", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*",
		"GIT_CONFIG_KEY_1=user.name", "GIT_CONFIG_VALUE_1=w", "GIT_CONFIG_KEY_2=user.email", "GIT_CONFIG_VALUE_2=w@example.com",
		"GIT_CONFIG_KEY_3=protocol.file.allow", "GIT_CONFIG_VALUE_3=always"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustHostGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := hostGit(t, dir, args...); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// gitRepo makes dir a repository with one commit and a submodule (its git
// directory in .git/modules/sub, a gitlink at sub/.git), owned like dir.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	src := t.TempDir()
	mustHostGit(t, src, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(src, "s.txt"), []byte("s\n"), 0o644)
	mustHostGit(t, src, "add", "s.txt")
	mustHostGit(t, src, "commit", "-qm", "s")
	mustHostGit(t, dir, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	mustHostGit(t, dir, "add", "a.txt")
	mustHostGit(t, dir, "submodule", "--quiet", "add", src, "sub")
	mustHostGit(t, dir, "commit", "-qm", "a")
	WriteFiles(t, dir, nil) // owned like dir
}

// gitAttack is one way a jailed command could make the host's git run a
// program of its choosing, and how the host's git then meets it.
type gitAttack struct {
	name string
	// jail is the command line the jail runs (it must fail); MARKER is the
	// file the planted program would create.
	jail string
	// control does the same on the host, to a copy of the repository, to
	// prove that git does run what it plants (so the row can fail).
	control string
	// host is what the user then runs on the host.
	host []string
}

const fsmonitor = `printf '[core]\n\tfsmonitor = "touch MARKER; false"\n'`

var gitAttacks = []gitAttack{
	{name: "commondir", host: []string{"status"},
		jail: "mkdir evilgit && cp -r .git/objects .git/refs .git/HEAD evilgit/ && " + fsmonitor + " > evilgit/config && echo ../evilgit > .git/commondir",
		// The jail's copy of the repository has a placeholder commondir: the
		// control goes through the same steps on a copy without one.
		control: "rm -f .git/commondir && mkdir evilgit && cp -r .git/objects .git/refs .git/HEAD evilgit/ && " + fsmonitor + " > evilgit/config && echo ../evilgit > .git/commondir"},
	{name: "config", host: []string{"status"},
		jail:    fsmonitor + " >> .git/config",
		control: fsmonitor + " >> .git/config"},
	{name: "config.worktree", host: []string{"status"},
		jail:    fsmonitor + " > .git/config.worktree && printf '[extensions]\\n\\tworktreeConfig = true\\n' >> .git/config",
		control: fsmonitor + " > .git/config.worktree && printf '[extensions]\\n\\tworktreeConfig = true\\n' >> .git/config"},
	{name: "hooks", host: []string{"commit", "-q", "--allow-empty", "-m", "x"},
		jail:    "printf '#!/bin/sh\\ntouch MARKER\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
		control: "printf '#!/bin/sh\\ntouch MARKER\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"},
	{name: "info/attributes", host: []string{"diff", "--", "a.txt"},
		jail:    "echo changed >> a.txt && echo 'a.txt diff=evil' > .git/info/attributes",
		control: "echo changed >> a.txt && echo 'a.txt diff=evil' > .git/info/attributes && printf '[diff \"evil\"]\\n\\tcommand = \"touch MARKER; true\"\\n' >> .git/config"},
	{name: "worktrees", host: []string{"status"},
		jail: "mkdir -p .git/worktrees/evil && echo ../.. > .git/worktrees/evil/commondir"},
	{name: "submodule config", host: []string{"status"},
		jail:    fsmonitor + " >> .git/modules/sub/config",
		control: fsmonitor + " >> .git/modules/sub/config"},
	{name: "submodule hooks", host: []string{"-C", "sub", "commit", "-q", "--allow-empty", "-m", "x"},
		jail:    "printf '#!/bin/sh\\ntouch MARKER\\n' > .git/modules/sub/hooks/pre-commit && chmod +x .git/modules/sub/hooks/pre-commit",
		control: "printf '#!/bin/sh\\ntouch MARKER\\n' > .git/modules/sub/hooks/pre-commit && chmod +x .git/modules/sub/hooks/pre-commit"},
	{name: "gitlink", host: []string{"status"},
		jail:    "mkdir evilsub && cp -r .git/modules/sub/. evilsub/ && " + fsmonitor + " >> evilsub/config && echo 'gitdir: ../evilsub' > sub/.git",
		control: "mkdir evilsub && cp -r .git/modules/sub/. evilsub/ && " + fsmonitor + " >> evilsub/config && echo 'gitdir: ../evilsub' > sub/.git"},
}

// testGit: nothing a jailed command can write makes the host's git run a
// program (config, config.worktree, commondir, hooks, info, worktrees, a
// submodule's config and hooks, a gitlink, also where they did not exist),
// .git cannot be renamed or replaced, and git add, commit and checkout
// still work in the jail.
func testGit(t *testing.T, f *Fixture) {
	testenv.Need(t, "git")
	dir := f.workspace(t, nil)
	gitRepo(t, dir)
	w := f.startIn(t, dir, nil, nil)
	if res := run(t, w, "git --version"); res.ExitCode != 0 {
		t.Fatalf("no git in the jail: %q", res.Output)
	}
	for _, a := range gitAttacks {
		t.Run(a.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "MARKER")
			if a.control != "" {
				// The control: the same plant, done on the host to a copy.
				cp := t.TempDir()
				if out, err := exec.Command("cp", "-a", dir+"/.", cp).CombinedOutput(); err != nil {
					t.Fatalf("cp: %v %s", err, out)
				}
				sh := exec.Command("bash", "-c", strings.ReplaceAll(a.control, "MARKER", marker))
				sh.Dir = cp
				if out, err := sh.CombinedOutput(); err != nil {
					t.Fatalf("control plant: %v %s", err, out)
				}
				hostGit(t, cp, a.host...)
				if _, err := os.Stat(marker); err != nil {
					t.Fatalf("the host's git did not run what the control planted (%v): the row proves nothing", err)
				}
				os.Remove(marker)
			}
			res := run(t, w, strings.ReplaceAll(a.jail, "MARKER", marker))
			if res.ExitCode == 0 {
				t.Errorf("the jail planted it: %q succeeded", a.jail)
			}
			out, _ := hostGit(t, dir, a.host...)
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the host's git ran a program planted from the jail (git %v: %s)", a.host, out)
			}
		})
	}
	t.Run("git works in the jail", func(t *testing.T) {
		res := run(t, w, "echo b > b.txt && git add b.txt && git -c user.name=w -c user.email=w@example.com commit -qm b && "+
			"git checkout -q -b topic && git checkout -q main && git status --porcelain --ignore-submodules=none")
		if res.ExitCode != 0 {
			t.Fatalf("git add/commit/checkout in the jail: %q", res.Output)
		}
		if out, err := hostGit(t, dir, "log", "--format=%s", "-1", "topic"); err != nil || out != "b\n" {
			t.Errorf("the host does not see the jail's commit: %q %v", out, err)
		}
		if out, err := hostGit(t, dir, "fsck", "--no-progress"); err != nil {
			t.Errorf("git fsck on the host after the jail's commits: %v %s", err, out)
		}
	})
	t.Run(".git cannot be renamed or replaced", func(t *testing.T) {
		config, _ := os.ReadFile(filepath.Join(dir, ".git/config"))
		ino := func() uint64 {
			st, err := os.Stat(filepath.Join(dir, ".git"))
			if err != nil {
				t.Fatal(err)
			}
			return st.Sys().(*syscall.Stat_t).Ino
		}
		before := ino()
		mustFail(t, w, "mv .git .gitold")
		mustFail(t, w, "rm -rf .git; git init -q")
		if _, err := os.Stat(filepath.Join(dir, ".gitold")); err == nil {
			t.Error(".git was renamed")
		}
		if ino() != before {
			t.Error(".git was replaced")
		}
		if b, _ := os.ReadFile(filepath.Join(dir, ".git/config")); !bytes.Equal(b, config) {
			t.Errorf(".git/config changed:\n%s", b)
		}
	})
}
