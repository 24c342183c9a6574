package control

import (
	"errors"
	"fmt"

	"lorrycontroller.dev/lc/confgit"
)

// CheckSections is what applying a configuration checks of it beyond
// what confgit checks in reading it, before it changes anything: each
// host section, with checkHost (App.CheckHost; nil checks nothing). The
// check-config command runs it too, so that a configuration it passes
// is one that read-configuration applies.
//
// The error names every host section that fails, not only the first,
// and a *confgit.ConfError in it names the section's place in the file.
func CheckSections(cfg *confgit.Config, checkHost func(confgit.Host) error) error {
	if checkHost == nil {
		return nil
	}
	var errs []error
	for _, h := range cfg.Hosts {
		err := checkHost(h)
		if err == nil {
			continue
		}
		var ce *confgit.ConfError
		if errors.As(err, &ce) && ce.Section < 0 {
			placed := *ce
			placed.Section = h.Index
			err = &placed
		}
		errs = append(errs, fmt.Errorf("host %q: %w", h.Name, err))
	}
	return errors.Join(errs...)
}
