// Package flagconf lets a program's flags also be set from a configuration
// file of "key = value" lines, so that systemd units and operators can keep
// settings in /etc while the command line still wins. It also reads the
// configuration files of the original Python Lorry Controller, whose keys
// Options describe; Original holds those of its WEBAPP and its MINION.
package flagconf

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// Options describe the keys of older configuration files, which are not
// flags. Every other key that is not a flag stays an error, so that a typo
// never passes unnoticed.
type Options struct {
	// Renamed maps an old key to the flag that now holds its value.
	Renamed map[string]string
	// Ignored maps an old key that no longer means anything to the reason
	// why. The key is accepted and reported as a warning, so that a file
	// written for the original program still starts this one.
	Ignored map[string]string
	// Custom handles old keys whose values need converting, such as a host
	// and a port that together make one address. The function sees the
	// value as written; it is called even if the command line set the flag
	// that the key feeds, so the program decides which wins.
	Custom map[string]func(value string) error
}

// ApplyWith reads the file at path and sets every flag of fs that the command
// line did not set. Keys are flag names; underscores may stand for dashes.
// Blank lines, lines starting with '#' or ';' and a "[config]" section
// header are skipped. An unknown key or a bad value is an error naming the
// line.
//
// It also accepts the old keys that opts describes, and
// returns a warning for each renamed or ignored key it met.
//
// Values are read as the original program wrote them too: a duration may
// be a bare number of seconds, and a boolean may be yes/no or on/off.
func ApplyWith(fs *flag.FlagSet, path string, opts Options) (warnings []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
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
				return warnings, fmt.Errorf("%s:%d: unknown section %s (only [config] is known)", path, n, line)
			}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return warnings, fmt.Errorf("%s:%d: want key = value, got %q", path, n, line)
		}
		key = strings.ReplaceAll(strings.TrimSpace(key), "_", "-")
		value = strings.TrimSpace(value)
		if len(value) >= 2 && (value[0] == '"' && value[len(value)-1] == '"' || value[0] == '\'' && value[len(value)-1] == '\'') {
			value = value[1 : len(value)-1]
		}
		// A flag is always itself: old keys are only the names that are no
		// flag, so that a flag added later is never ignored.
		if fs.Lookup(key) == nil {
			if custom, ok := opts.Custom[key]; ok {
				if err := custom(value); err != nil {
					return warnings, fmt.Errorf("%s:%d: %s: %w", path, n, key, err)
				}
				continue
			}
			if reason, ok := opts.Ignored[key]; ok {
				warnings = append(warnings, fmt.Sprintf("%s:%d: %s is ignored: %s", path, n, key, reason))
				continue
			}
			if to, ok := opts.Renamed[key]; ok {
				warnings = append(warnings, fmt.Sprintf("%s:%d: %s is read as %s, its name now", path, n, key, to))
				key = to
			}
		}
		// A file naming another file would make the result depend on order.
		fl := fs.Lookup(key)
		if key == "config" || fl == nil {
			return warnings, fmt.Errorf("%s:%d: unknown key %q", path, n, key)
		}
		if set[key] {
			continue
		}
		if err := fs.Set(key, fileValue(fl, value)); err != nil {
			return warnings, fmt.Errorf("%s:%d: %s: %w", path, n, key, err)
		}
	}
	if err := sc.Err(); err != nil {
		return warnings, fmt.Errorf("read %s: %w", path, err)
	}
	return warnings, nil
}

// fileValue turns a value written the way the original program's files
// wrote it into one the flag parses.
func fileValue(fl *flag.Flag, value string) string {
	if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		switch strings.ToLower(value) {
		case "yes", "on":
			return "true"
		case "no", "off":
			return "false"
		}
	}
	if g, ok := fl.Value.(flag.Getter); ok {
		if _, ok := g.Get().(time.Duration); ok && value != "" && strings.Trim(value, "0123456789") == "" {
			return value + "s"
		}
	}
	return value
}

// Parse parses args into fs, then applies the file named by the flag
// configFlag, if that flag was given.
func Parse(fs *flag.FlagSet, args []string, configFlag string) error {
	_, err := ParseWith(fs, args, configFlag, Options{})
	return err
}

// ParseWith is Parse with the old keys that opts describes; it returns the
// warnings of ApplyWith.
func ParseWith(fs *flag.FlagSet, args []string, configFlag string, opts Options) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	fl := fs.Lookup(configFlag)
	if fl == nil {
		return nil, errors.New("no flag " + configFlag)
	}
	if path := fl.Value.String(); path != "" {
		return ApplyWith(fs, path, opts)
	}
	return nil, nil
}
