// Command lorry mirrors repositories as .lorry specs describe them: it keeps
// a persistent bare git mirror per spec in its working area and pushes it
// to the downstream git host.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/mirror"
	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/wire"
)

// Config is what lorry is told on its command line.
type Config struct {
	Specs   []string // spec files
	Options mirror.Options
	// ResultFile, if set, receives what each spec's run found, as JSON.
	ResultFile string
	// ResultFD, if not -1, is an open descriptor that receives the same:
	// the minion's, which it gave lorry, and reads when lorry is done.
	ResultFD int
}

// The environment variables from which lorry takes push URLs that carry
// credentials, which must not be on its command line, where any user of
// the machine can read them.
const (
	envPushURL           = wire.EnvPushURL
	envMirrorBaseURLPush = wire.EnvMirrorBaseURLPush
)

// parseArgs reads the command line args, and the push URLs from the
// variables env has (see envPushURL).
func parseArgs(args []string, env map[string]string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("lorry", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: lorry [flags] SPECFILE...\n\n"+
			"Mirror the repositories that the .lorry spec files describe (JSON or YAML,\n"+
			"specs keyed by name) and push them downstream. Exits 0 only if every spec\n"+
			"succeeded.\n\n"+
			"A push URL with credentials (https://USER:TOKEN@host/...) is given in the\n"+
			"environment, as "+envPushURL+" or "+envMirrorBaseURLPush+", never with\n"+
			"the flags: any user of the machine can read a command line. lorry hands\n"+
			"the credentials to git through git's environment too.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.Options.WorkingArea, "working-area", "workd", "`directory` that keeps a mirror per spec between runs")
	fs.StringVar(&c.Options.PushURL, "push-url", "", "push the mirror to this `url` (only with a single spec); one with credentials goes in "+envPushURL)
	fs.StringVar(&c.Options.MirrorBaseURLPush, "mirror-base-url-push", "", "push each spec to `base`/NAME.git; one with credentials goes in "+envMirrorBaseURLPush)
	fs.BoolVar(&c.Options.PullOnly, "pull-only", false, "update the mirrors, push nothing")
	fs.BoolVar(&c.Options.Verbose, "verbose", false, "say more about what is done")
	fs.StringVar(&c.ResultFile, "result-file", "", "after the run, write what it found for each spec (such as the upstream's default branch) to `file` as JSON")
	fs.IntVar(&c.ResultFD, "result-fd", -1, "after the run, write the same JSON to the open descriptor `fd` (3 or more) that lorry was given")
	fs.DurationVar(&c.Options.LockWait, "lock-wait", 10*time.Minute, "wait this long for another lorry working on the same mirror")
	fs.BoolVar(&c.Options.AllowLocalSources, "allow-local-sources", false, "let specs mirror paths and file: URLs of this machine, and download from its loopback and link-local addresses (refused by default)")
	fs.StringVar(&c.Options.GitConfig, "git-config", "", "the `file` of git configuration (URL rewrites, certificates, ssh, safe.directory) that every git lorry runs reads, and no other (default: .gitconfig in the home that the passwd entry of lorry's user names; "+os.DevNull+" for none)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.Specs = fs.Args()
	if c.ResultFD != -1 && c.ResultFD < 3 {
		return c, fmt.Errorf("--result-fd %d: want a descriptor of 3 or more, not a standard stream", c.ResultFD)
	}
	if c.ResultFD != -1 && c.ResultFile != "" {
		return c, errors.New("--result-file and --result-fd exclude each other")
	}
	if len(c.Specs) == 0 {
		fs.Usage()
		return c, errors.New("no spec file given")
	}
	for _, u := range []struct {
		flag, env string
		val       *string
	}{
		{"--push-url", envPushURL, &c.Options.PushURL},
		{"--mirror-base-url-push", envMirrorBaseURLPush, &c.Options.MirrorBaseURLPush},
	} {
		if hasPassword(*u.val) {
			return c, fmt.Errorf("%s has credentials, which any user of this machine can read on a command line: give the URL in %s instead", u.flag, u.env)
		}
		if v := env[u.env]; v != "" {
			if *u.val != "" {
				return c, fmt.Errorf("%s and %s exclude each other", u.flag, u.env)
			}
			*u.val = v
		}
	}
	if c.Options.PushURL != "" && c.Options.MirrorBaseURLPush != "" {
		return c, errors.New("--push-url and --mirror-base-url-push exclude each other")
	}
	return c, nil
}

// hasPassword tells whether u is a URL with a password.
func hasPassword(u string) bool {
	parsed, err := url.Parse(u)
	if err != nil || parsed.User == nil {
		return false
	}
	_, ok := parsed.User.Password()
	return ok
}

func main() {
	// The push URLs are taken out of the environment, so that no program
	// lorry runs inherits their credentials.
	env := map[string]string{}
	for _, name := range []string{envPushURL, envMirrorBaseURLPush} {
		env[name] = os.Getenv(name)
		os.Unsetenv(name)
	}
	cfg, err := parseArgs(os.Args[1:], env, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lorry:", redact.URLs(err.Error()))
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if cfg.Options.GitConfig == "" {
		cfg.Options.GitConfig, err = userGitConfig(os.Getuid())
		if err != nil {
			fmt.Fprintf(os.Stderr, "lorry: git reads no configuration of the user: %v\n", err)
		}
	}
	cfg.Options.Out = os.Stderr
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lorry:", redact.URLs(err.Error()))
		os.Exit(1)
	}
}

// userGitConfig is the git configuration of the user uid: .gitconfig in
// the home that its passwd entry names, where ssh finds its keys too. Not
// $HOME, which lorry's environment could set to anything. A user without
// a home has none: os.DevNull, with the error that says why.
func userGitConfig(uid int) (string, error) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return os.DevNull, err
	}
	if u.HomeDir == "" {
		return os.DevNull, fmt.Errorf("user %d has no home", uid)
	}
	return filepath.Join(u.HomeDir, ".gitconfig"), nil
}

// run mirrors every spec of every file, printing a line per spec, and
// fails if any spec failed.
func run(ctx context.Context, cfg Config, stdout io.Writer) error {
	var resultFD *os.File
	if cfg.ResultFD != -1 {
		f, err := openResultFD(cfg.ResultFD)
		if err != nil {
			return err
		}
		defer f.Close()
		resultFD = f
	}
	var specs []lorryspec.Spec
	for _, file := range cfg.Specs {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		s, err := lorryspec.Read(data)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		specs = append(specs, s...)
	}
	if cfg.Options.PushURL != "" && len(specs) > 1 {
		return fmt.Errorf("--push-url names one repository, but there are %d specs", len(specs))
	}
	failed := 0
	results := newResultFile()
	for _, s := range specs {
		res := mirror.Run(ctx, s, cfg.Options)
		fmt.Fprintln(stdout, res)
		results.add(res)
		if res.Err != nil {
			failed++
		}
		if ctx.Err() != nil {
			break
		}
	}
	if cfg.ResultFile != "" {
		if err := results.write(cfg.ResultFile); err != nil {
			return err
		}
	}
	if resultFD != nil {
		if err := results.writeTo(resultFD); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d specs failed", failed, len(specs))
	}
	return nil
}
