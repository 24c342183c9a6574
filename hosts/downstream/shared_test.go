package downstream

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"lorrycontroller.dev/lc/seccomptest"
)

// The ids of the shared-repository test: a group that the base directory
// has, a user in it that pushes as the minion's jobs do (that group and
// no other), and a user outside it. Unused ids, so no user of the
// machine is lent anything.
const (
	sharedGID = 54321
	pusherUID = 54321
	strangerU = 54322
)

// asUser runs git as uid:gid, with no other group and the test's umask.
func asUser(t *testing.T, uid, gid uint32, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}}
	cmd.Env = append(os.Environ(), "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// A repository that a local downstream makes, under the WEBAPP's umask
// 0027, takes the base directory's group and lets another user of that
// group push to it, as the jobs' user does; every user may read it only
// when every user may enter the base directory.
func TestLocalSharedWithGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: pushing as another user takes root (CI runs this as root)")
	}
	old := syscall.Umask(0o027)
	t.Cleanup(func() { syscall.Umask(old) })
	top, err := os.MkdirTemp("", "downstream-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	if err := os.Chmod(top, 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		base       os.FileMode
		shared     string // core.sharedRepository as git init writes it
		dirs, repo os.FileMode
		othersRead bool
		// restricted makes the repository in a child under the units'
		// RestrictSUIDSGID=.
		restricted bool
	}{
		{name: "group", base: 0o750, shared: "1", dirs: 0o750, repo: 0o770},
		{name: "all", base: 0o755, shared: "2", dirs: 0o755, repo: 0o775, othersRead: true},
		{name: "group restricted", base: 0o750, shared: "1", dirs: 0o750, repo: 0o770, restricted: true},
		{name: "all restricted", base: 0o755, shared: "2", dirs: 0o755, repo: 0o775, othersRead: true, restricted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := filepath.Join(top, strings.ReplaceAll(tt.name, " ", "-"))
			if err := os.Mkdir(base, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(base, 0, sharedGID); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(base, tt.base|os.ModeSetgid); err != nil {
				t.Fatal(err)
			}
			prepare := prepareHere
			if tt.restricted {
				prepare = prepareRestricted
			}
			dir := prepare(t, base, "team/project")

			checkMode(t, filepath.Join(base, "team"), tt.dirs|os.ModeSetgid|fs.ModeDir)
			err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() {
					checkMode(t, path, tt.repo|os.ModeSetgid|fs.ModeDir)
				} else if fi, err := os.Stat(path); err != nil {
					t.Error(err)
				} else if fi.Mode()&0o060 != 0o060 {
					t.Errorf("%s: mode %v, want it group-writable", path, fi.Mode())
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("git", "--git-dir", dir, "config", "core.sharedRepository").Output(); err != nil || strings.TrimSpace(string(out)) != tt.shared {
				t.Errorf("core.sharedRepository: got %q, %v; want %q", out, err, tt.shared)
			}

			// A user of the group, with no other, pushes.
			src := filepath.Join(top, strings.ReplaceAll(tt.name, " ", "-")+"-src")
			if err := os.Mkdir(src, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(src, pusherUID, sharedGID); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"init", "-q", "-b", "main", src},
				{"-C", src, "commit", "-q", "--allow-empty", "-m", "first"},
				{"-C", src, "push", "-q", "--receive-pack", trusting(dir, "receive-pack"), dir, "main"},
				// A mirror follows an upstream that rewrote its
				// history: git init --shared alone refuses that.
				{"-C", src, "commit", "-q", "--amend", "--allow-empty", "-m", "rewritten"},
				{"-C", src, "push", "-q", "--force", "--receive-pack", trusting(dir, "receive-pack"), dir, "main"},
			} {
				if out, err := asUser(t, pusherUID, sharedGID, args...); err != nil {
					t.Fatalf("git %s as a user of the group: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
			out, err := asUser(t, strangerU, strangerU, "ls-remote", "--upload-pack", trusting(dir, "upload-pack"), dir)
			if read := err == nil && strings.Contains(out, "refs/heads/main"); read != tt.othersRead {
				t.Errorf("a user outside the group reads the repository: %v (%v: %s), want %v", read, err, out, tt.othersRead)
			}
		})
	}
}

// prepareEnv makes the test binary a WEBAPP under the units' filter that
// prepares one repository: prepareRestricted.
const prepareEnv = "DOWNSTREAM_TEST_PREPARE"

func TestMain(m *testing.M) {
	if os.Getenv(prepareEnv) == "1" {
		// As the unit: its umask, and RestrictSUIDSGID=.
		syscall.Umask(0o027)
		if err := seccomptest.Restrict(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		base, path := os.Args[len(os.Args)-2], os.Args[len(os.Args)-1]
		dir, err := Local{BaseDir: base}.Prepare(context.Background(), Repo{Path: path})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Print(dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func prepareHere(t *testing.T, base, path string) string {
	t.Helper()
	dir, err := Local{BaseDir: base}.Prepare(context.Background(), Repo{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// prepareRestricted prepares path under base in a child under the units'
// umask and RestrictSUIDSGID=, where nothing may set a setgid bit.
func prepareRestricted(t *testing.T, base, path string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$", base, path)
	cmd.Env = append(os.Environ(), prepareEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 3 {
		t.Skipf("no RestrictSUIDSGID= filter here: %s", stderr.String())
	}
	if err != nil {
		t.Fatalf("prepare under RestrictSUIDSGID=: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// trusting is the git program prog run in dir, which another user owns.
func trusting(dir, prog string) string {
	return "git -c safe.directory='" + dir + "' " + prog
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != want {
		t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
	}
	if gid := fi.Sys().(*syscall.Stat_t).Gid; gid != sharedGID {
		t.Errorf("%s: group %d, want the base directory's, %d", path, gid, sharedGID)
	}
}
