package mirror

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"lorrycontroller.dev/lc/atomicfile"
	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/redact"
)

func init() { importers["cvs"] = importCvs }

// importCvs converts a module of a CVS repository with git cvsimport,
// which reads the history through cvsps: HEAD becomes master, CVS
// branches become branches and CVS tags become tags.
//
// The state lives in cvs/ beside the mirror: the conversion repository,
// whose branches tell cvsimport where each one stopped, and a home
// directory for cvsps, which caches the CVS log there, so that each run
// reads and converts only what is new upstream.
func importCvs(ctx context.Context, j *job, v any) ([]string, bool, error) {
	c := v.(*lorryspec.Cvs)
	if err := needConverterTools(ctx, "cvs",
		converterTool{"git-cvsimport", "git-cvs"},
		converterTool{"cvsps", "cvsps"},
		converterTool{"cvs", "cvs"},
	); err != nil {
		return nil, false, err
	}
	// git cvsimport, and cvsps which it runs, are given the root without
	// its password, and find the password in the .cvspass of their home:
	// a directory outside the working area that only this user can read,
	// there for the run alone. The home's .cvsps, where cvsps caches the
	// CVS log, is the one of the working area.
	root, err := parseCvsRoot(c.URL)
	if err != nil {
		return nil, false, err
	}
	plain := root.plain()
	dir, err := j.converterDirOf("cvs", plain+"\n"+c.Module, c.URL+"\n"+c.Module)
	if err != nil {
		return nil, false, err
	}
	cache := filepath.Join(dir, "home", ".cvsps")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, false, err
	}
	// A run before kept the password file in the working area.
	if err := os.Remove(filepath.Join(dir, "home", ".cvspass")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, false, err
	}
	home, err := privateDir("cvs")
	if err != nil {
		return nil, false, err
	}
	defer os.RemoveAll(home)
	if err := os.Symlink(cache, filepath.Join(home, ".cvsps")); err != nil {
		return nil, false, err
	}
	passFile := filepath.Join(home, ".cvspass")
	if err := writeCvsPass(passFile, root.passLines()); err != nil {
		return nil, false, err
	}

	gitDir := filepath.Join(dir, "git")
	target := gitDir
	if _, err := os.Stat(gitDir); err != nil {
		// cvsimport makes the repository on its first run, and refuses
		// a repository without the branch it imports HEAD to: the first
		// conversion is made under another name and renamed when it is
		// complete.
		target = gitDir + ".new"
		if err := os.RemoveAll(target); err != nil {
			return nil, false, err
		}
	}
	env := j.upstreamEnv(target,
		"HOME="+home, "CVS_PASSFILE="+passFile,
		// Without these, the repository cvsimport makes says how to
		// choose the name of its first branch.
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=init.defaultBranch", "GIT_CONFIG_VALUE_0=master",
	)
	if os.Getenv("CVS_RSH") == "" {
		// CVS's own default for :ext: roots; cvsps's is rsh.
		env = append(env, "CVS_RSH=ssh")
	}
	fmt.Fprintf(j.out, "converting module %s of %s with git cvsimport\n", c.Module, redact.URLs(c.URL))
	// -a: the latest commits too; cvsimport otherwise leaves the last
	// ten minutes for a later run, and the downstream would always lag
	// that far behind.
	// -i: import only, into a repository without a working tree.
	// -k: keywords such as $Id$ unexpanded, so that content does not
	// depend on where the file was checked out from.
	// --: a module starting with "-" is the module, not an option such
	// as -P FILE, which would have cvsimport read a file of this machine.
	args := []string{"cvsimport", "-v", "-a", "-i", "-k", "-o", "master", "-d", plain, "-C", dir, "--", c.Module}
	if err := j.runTool(ctx, dir, env, "git", args...); err != nil {
		return nil, false, fmt.Errorf("convert %s: %w", redact.URLs(c.URL), err)
	}
	if target != gitDir {
		if err := os.Rename(target, gitDir); err != nil {
			return nil, false, err
		}
	}
	return j.takeConverted(ctx, gitDir, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
}

// writeCvsPass writes the .cvspass that cvs, cvsps and git cvsimport
// read, 0600: the lines of the spec's password, if any, before those
// that the admin saved with "cvs login" (in CVS_PASSFILE, or the .cvspass
// of the home directory). Without an entry, each logs in with the empty
// password, as anonymous access wants.
func writeCvsPass(file, lines string) error {
	data := []byte(lines)
	own := os.Getenv("CVS_PASSFILE")
	if own == "" {
		if real, err := os.UserHomeDir(); err == nil {
			own = filepath.Join(real, ".cvspass")
		}
	}
	if own != "" && own != file {
		saved, err := os.ReadFile(own)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		data = append(data, saved...)
	}
	if len(data) == 0 {
		if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return atomicfile.WriteFile(file, data, 0o600)
}

// cvsScramble is CVS's scrambling of a password in .cvspass and in the
// pserver protocol: "A", then each byte through a fixed table. It hides
// the password from a glance, not from anyone who reads it.
func cvsScramble(password string) string {
	b := []byte{'A'}
	for i := 0; i < len(password); i++ {
		b = append(b, cvsScrambleTable[password[i]])
	}
	return string(b)
}

var cvsScrambleTable = [256]byte{
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
	114, 120, 53, 79, 96, 109, 72, 108, 70, 64, 76, 67, 116, 74, 68, 87,
	111, 52, 75, 119, 49, 34, 82, 81, 95, 65, 112, 86, 118, 110, 122, 105,
	41, 57, 83, 43, 46, 102, 40, 89, 38, 103, 45, 50, 42, 123, 91, 35,
	125, 55, 54, 66, 124, 126, 59, 47, 92, 71, 115, 78, 88, 107, 106, 56,
	36, 121, 117, 104, 101, 100, 69, 73, 99, 63, 94, 93, 39, 37, 61, 48,
	58, 113, 32, 90, 44, 98, 60, 51, 33, 97, 62, 77, 84, 80, 85, 223,
	225, 216, 187, 166, 229, 189, 222, 188, 141, 249, 148, 200, 184, 136, 248, 190,
	199, 170, 181, 204, 138, 232, 218, 183, 255, 234, 220, 247, 213, 203, 226, 193,
	174, 172, 228, 252, 217, 201, 131, 230, 197, 211, 145, 238, 161, 179, 160, 212,
	207, 221, 254, 173, 202, 146, 224, 151, 140, 196, 205, 130, 135, 133, 143, 246,
	192, 159, 244, 239, 185, 168, 215, 144, 139, 165, 180, 157, 147, 186, 214, 176,
	227, 231, 219, 169, 175, 156, 206, 198, 129, 164, 150, 210, 154, 177, 134, 127,
	182, 128, 158, 208, 162, 132, 167, 209, 149, 241, 153, 251, 237, 236, 171, 195,
	243, 233, 253, 240, 194, 250, 191, 155, 142, 137, 245, 235, 163, 242, 178, 152,
}
