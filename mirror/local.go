package mirror

import (
	"os"
	"path/filepath"
	"strings"

	"lorrycontroller.dev/lc/proc"
)

// A local downstream's repositories are made by the WEBAPP, and pushed
// to by lorry, which may run as another user, of their group (the
// minion's --job-user). Two things of git stand in the way, and lorry
// deals with both for a repository of this machine only.
//
// git works in no repository that another user owns ("detected dubious
// ownership") unless safe.directory names it in configuration that lorry
// does not read, and it clears the variables that would carry it to the
// receive-pack or upload-pack it starts on this machine; so those are
// run with the setting on their own command line, for that repository
// alone (trustLocal).
//
// In a shared repository (core.sharedRepository, setgid directories) git
// makes each new directory group-writable and setgid with chmod when the
// umask did not, and systemd's RestrictSUIDSGID= refuses that chmod; so
// lorry pushes under the umask that the repository's own directory's
// mode leaves (writeLocal), and git has nothing to change.

// trustLocal is the option that runs git's prog (receive-pack or
// upload-pack) trusting the repository at url, if url is one of this
// machine; none otherwise.
func trustLocal(url, prog string) []string {
	dir, ok := localRepo(url)
	if !ok {
		return nil
	}
	cmd := "git"
	dirs := []string{dir}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		dirs = append(dirs, real)
	}
	for _, d := range dirs {
		cmd += " -c " + shellQuote("safe.directory="+d)
	}
	return []string{"--" + prog + "=" + cmd + " " + prog}
}

// shellQuote quotes s for sh, which git runs a local pack program with.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeLocal runs fn, which writes to the repository at url, under the
// umask that the mode of the repository's directory leaves when url is a
// shared repository of this machine (its directory setgid); as it is
// otherwise.
func writeLocal(url string, fn func() error) error {
	dir, ok := localRepo(url)
	if !ok {
		return fn()
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode()&os.ModeSetgid == 0 {
		return fn()
	}
	return proc.WithUmask(int(0o777&^fi.Mode().Perm()), fn)
}
