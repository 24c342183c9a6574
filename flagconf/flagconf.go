// Package flagconf lets a program's flags also be set from a configuration
// file of "key = value" lines, so that systemd units and operators can keep
// settings in /etc while the command line still wins.
package flagconf

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// Apply reads the file at path and sets every flag of fs that the command
// line did not set. Keys are flag names; underscores may stand for dashes.
// Blank lines, lines starting with '#' or ';' and a "[config]" section
// header are skipped. An unknown key or a bad value is an error naming the
// line.
func Apply(fs *flag.FlagSet, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })

	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") {
			if !strings.EqualFold(line, "[config]") {
				return fmt.Errorf("%s:%d: unknown section %s (only [config] is known)", path, n, line)
			}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("%s:%d: want key = value, got %q", path, n, line)
		}
		key = strings.ReplaceAll(strings.TrimSpace(key), "_", "-")
		value = strings.TrimSpace(value)
		if len(value) >= 2 && (value[0] == '"' && value[len(value)-1] == '"' || value[0] == '\'' && value[len(value)-1] == '\'') {
			value = value[1 : len(value)-1]
		}
		// A file naming another file would make the result depend on order.
		if key == "config" || fs.Lookup(key) == nil {
			return fmt.Errorf("%s:%d: unknown key %q", path, n, key)
		}
		if set[key] {
			continue
		}
		if err := fs.Set(key, value); err != nil {
			return fmt.Errorf("%s:%d: %s: %w", path, n, key, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// Parse parses args into fs, then applies the file named by the flag
// configFlag, if that flag was given.
func Parse(fs *flag.FlagSet, args []string, configFlag string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	fl := fs.Lookup(configFlag)
	if fl == nil {
		return errors.New("no flag " + configFlag)
	}
	if path := fl.Value.String(); path != "" {
		return Apply(fs, path)
	}
	return nil
}
