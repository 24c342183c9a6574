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
	"os"
	"os/signal"
	"syscall"
	"time"

	"lorrycontroller/lorryspec"
	"lorrycontroller/mirror"
)

// Config is what lorry is told on its command line.
type Config struct {
	Specs   []string // spec files
	Options mirror.Options
	// ResultFile, if set, receives what each spec's run found, as JSON.
	ResultFile string
}

func parseArgs(args []string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("lorry", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: lorry [flags] SPECFILE...\n\n"+
			"Mirror the repositories that the .lorry spec files describe (JSON or YAML,\n"+
			"specs keyed by name) and push them downstream. Exits 0 only if every spec\n"+
			"succeeded.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.Options.WorkingArea, "working-area", "workd", "`directory` that keeps a mirror per spec between runs")
	fs.StringVar(&c.Options.PushURL, "push-url", "", "push the mirror to this `url` (only with a single spec)")
	fs.StringVar(&c.Options.MirrorBaseURLPush, "mirror-base-url-push", "", "push each spec to `base`/NAME.git")
	fs.BoolVar(&c.Options.PullOnly, "pull-only", false, "update the mirrors, push nothing")
	fs.BoolVar(&c.Options.Verbose, "verbose", false, "say more about what is done")
	fs.StringVar(&c.ResultFile, "result-file", "", "after the run, write what it found for each spec (such as the upstream's default branch) to `file` as JSON")
	fs.DurationVar(&c.Options.LockWait, "lock-wait", 10*time.Minute, "wait this long for another lorry working on the same mirror")
	fs.BoolVar(&c.Options.AllowLocalSources, "allow-local-sources", false, "let specs mirror paths and file: URLs of this machine (refused by default)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.Specs = fs.Args()
	if len(c.Specs) == 0 {
		fs.Usage()
		return c, errors.New("no spec file given")
	}
	if c.Options.PushURL != "" && c.Options.MirrorBaseURLPush != "" {
		return c, errors.New("--push-url and --mirror-base-url-push exclude each other")
	}
	return c, nil
}

func main() {
	cfg, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lorry:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg.Options.Out = os.Stderr
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lorry:", err)
		os.Exit(1)
	}
}

// run mirrors every spec of every file, printing a line per spec, and
// fails if any spec failed.
func run(ctx context.Context, cfg Config, stdout io.Writer) error {
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
	if failed > 0 {
		return fmt.Errorf("%d of %d specs failed", failed, len(specs))
	}
	return nil
}
