package confgit

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"lorrycontroller.dev/lc/lorryspec"
)

// Scraper is one spec of a .scraper file: a program run in the Python
// environment built from a runtime.
type Scraper struct {
	Runtime string `json:"runtime"`
	// Module is run as "python -m Module"; Command is an argv whose first
	// word is looked up in the environment's bin/ first. Exactly one is
	// given.
	Module  string   `json:"module,omitempty"`
	Command []string `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Config names files of CONFGIT handed to the job with it.
	Config []string          `json:"config,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
	// FDArgs asks the minion to pass the job the descriptors of the locks
	// it holds for it.
	FDArgs bool `json:"fd-args,omitempty"`
}

// scraperKeys are the keys a scraper spec may have. Unlike a .lorry spec,
// an unknown key is refused: a misspelt "env" or "fd-args" would otherwise
// change what runs without a word.
var scraperKeys = []string{"runtime", "module", "command", "args", "config", "env", "fd-args", "schedule"}

// reservedEnv are the variables the minion sets for a scraper, which a spec
// may not override.
var reservedEnv = []string{"PATH", "HOME", "VIRTUAL_ENV"}

// reservedEnvPrefix starts the names of the controller's own variables.
const reservedEnvPrefix = "LORRY_CONTROLLER_"

// ParseScraper checks a scraper spec, as decoded from a .scraper file or
// from the Text of its run-queue entry, and returns it. It does not know
// the runtimes or the files of the repository; Read checks those.
func ParseScraper(v any) (Scraper, error) {
	var s Scraper
	m, ok := v.(map[string]any)
	if !ok {
		return s, fmt.Errorf("must be an object, not %s", lorryspec.KindOf(v))
	}
	for k := range m {
		if !slices.Contains(scraperKeys, k) {
			return s, fmt.Errorf("unknown key %q (want %s)", k, strings.Join(scraperKeys, ", "))
		}
	}
	var err error
	if _, ok := m["runtime"]; !ok {
		return s, errors.New(`has no "runtime"`)
	}
	if s.Runtime, err = specString(m, "runtime"); err != nil {
		return s, err
	}
	if s.Module, s.Command, err = scraperProgram(m); err != nil {
		return s, err
	}
	if _, ok := m["args"]; ok {
		if s.Args, err = specList(m, "args"); err != nil {
			return s, err
		}
	}
	if _, ok := m["config"]; ok {
		if s.Config, err = scraperConfig(m); err != nil {
			return s, err
		}
	}
	if ev, ok := m["env"]; ok {
		if s.Env, err = scraperEnv(ev); err != nil {
			return s, err
		}
	}
	if fv, ok := m["fd-args"]; ok {
		if s.FDArgs, ok = fv.(bool); !ok {
			return s, fmt.Errorf(`"fd-args" must be a boolean, not %s`, lorryspec.KindOf(fv))
		}
	}
	return s, nil
}

// specString is the string at key of scraper spec m.
func specString(m map[string]any, key string) (string, error) {
	x, ok := m[key].(string)
	if !ok {
		return "", fmt.Errorf("%q must be a string, not %s", key, lorryspec.KindOf(m[key]))
	}
	return x, nil
}

// specList is the list of strings at key of scraper spec m.
func specList(m map[string]any, key string) ([]string, error) {
	l, err := stringList(m[key])
	if err != nil {
		return nil, fmt.Errorf("%q %w", key, err)
	}
	return l, nil
}

// scraperProgram is what scraper spec m runs: a Python module, or a
// command of the runtime.
func scraperProgram(m map[string]any) (module string, command []string, err error) {
	_, hasModule := m["module"]
	_, hasCommand := m["command"]
	switch {
	case hasModule && hasCommand:
		return "", nil, errors.New(`has both "module" and "command"; give one`)
	case hasModule:
		if module, err = specString(m, "module"); err != nil {
			return "", nil, err
		}
		if err := validateModule(module); err != nil {
			return "", nil, err
		}
		return module, nil, nil
	case hasCommand:
		if command, err = specList(m, "command"); err != nil {
			return "", nil, err
		}
		if len(command) == 0 || command[0] == "" {
			return "", nil, errors.New(`"command" must start with the program to run`)
		}
		return "", command, nil
	default:
		return "", nil, errors.New(`has neither "module" nor "command"`)
	}
}

// scraperConfig is the "config" of scraper spec m: paths in the
// repository, no two with the same base name.
func scraperConfig(m map[string]any) ([]string, error) {
	config, err := specList(m, "config")
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, c := range config {
		if err := ValidatePath(c); err != nil {
			return nil, fmt.Errorf(`"config" %q: %w`, c, err)
		}
		// The job finds each file by its base name.
		base := path.Base(c)
		if other, dup := names[base]; dup {
			return nil, fmt.Errorf(`"config" %q and %q have the same name %q`, other, c, base)
		}
		names[base] = c
	}
	return config, nil
}

// scraperEnv is the "env" of a scraper spec, ev: variables to set for
// the job.
func scraperEnv(ev any) (map[string]string, error) {
	em, ok := ev.(map[string]any)
	if !ok {
		return nil, fmt.Errorf(`"env" must be an object, not %s`, lorryspec.KindOf(ev))
	}
	env := make(map[string]string, len(em))
	for k, v := range em {
		if err := validateEnvName(k); err != nil {
			return nil, err
		}
		val, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf(`"env" %q must be a string, not %s`, k, lorryspec.KindOf(v))
		}
		if strings.ContainsRune(val, 0) {
			return nil, fmt.Errorf(`"env" %q has a NUL character`, k)
		}
		env[k] = val
	}
	return env, nil
}

// DecodeScraper reads the spec of a scraper from the Text of its run-queue
// entry: {path: spec}.
func DecodeScraper(text string) (Scraper, error) {
	v, err := lorryspec.DecodeJSON([]byte(text))
	if err != nil {
		return Scraper{}, err
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return Scraper{}, errors.New("scraper text must be an object of one spec")
	}
	for _, spec := range m {
		return ParseScraper(spec)
	}
	panic("unreachable")
}

// Argv is the command line of the scraper. The first word ("python" for
// a module) is to be looked up in the environment's bin/ first.
func (s Scraper) Argv() []string {
	var argv []string
	if s.Module != "" {
		argv = []string{"python", "-m", s.Module}
	} else {
		argv = slices.Clone(s.Command)
	}
	return append(argv, s.Args...)
}

// validateModule accepts dotted Python names only, so the module cannot
// be read as an option of python.
func validateModule(m string) error {
	if m == "" {
		return errors.New(`"module" is empty`)
	}
	for _, part := range strings.Split(m, ".") {
		if part == "" {
			return fmt.Errorf(`"module" %q is not a dotted module name`, m)
		}
		for i, r := range part {
			if r != '_' && !(r >= 'a' && r <= 'z') && !(r >= 'A' && r <= 'Z') && !(i > 0 && r >= '0' && r <= '9') {
				return fmt.Errorf(`"module" %q is not a dotted module name`, m)
			}
		}
	}
	return nil
}

func validateEnvName(k string) error {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return fmt.Errorf(`"env" name %q cannot be a variable name`, k)
	}
	if slices.Contains(reservedEnv, k) || strings.HasPrefix(k, reservedEnvPrefix) {
		return fmt.Errorf(`"env" may not set %s: the minion sets it`, k)
	}
	return nil
}
