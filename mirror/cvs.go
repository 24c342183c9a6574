package mirror

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"lorrycontroller/atomicfile"
	"lorrycontroller/lorryspec"
	"lorrycontroller/redact"
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
	dir, err := j.converterDir("cvs", c.URL+"\n"+c.Module)
	if err != nil {
		return nil, false, err
	}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, false, err
	}
	if err := copyCvsPass(home); err != nil {
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
		"HOME="+home,
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
	args := []string{"cvsimport", "-v", "-a", "-i", "-k", "-o", "master", "-d", c.URL, "-C", dir, "--", c.Module}
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

// copyCvsPass gives cvs and cvsps, which run with home as HOME, the
// passwords that the admin saved with "cvs login". Without one, both
// log in with the empty password, as anonymous access wants.
func copyCvsPass(home string) error {
	real, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(real, ".cvspass"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(home, ".cvspass"), data, 0o600)
}
