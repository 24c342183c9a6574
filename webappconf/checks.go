package webappconf

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/webhook"
)

// checkLease makes sure that a minion cut off from the WEBAPP has killed
// its job, grace included, before the job counts as a ghost and its lorry
// is handed out again: otherwise two runs of the lorry could push at once.
func (c *Config) checkLease() error {
	if c.Lease < 0 || c.KillGrace < 0 {
		return errors.New("--lease and --kill-grace must not be negative")
	}
	lease := control.EffectiveLease(c.Lease, c.GhostTimeout)
	if lease < time.Second {
		return fmt.Errorf("--lease %v: want at least 1s (it is counted in whole seconds)", lease)
	}
	if c.GhostTimeout <= lease+c.KillGrace {
		return fmt.Errorf("--ghost-timeout %v must be longer than --lease %v plus --kill-grace %v, so that a minion cut off from the WEBAPP kills its job before the job is ended as a ghost",
			c.GhostTimeout, lease, c.KillGrace)
	}
	return nil
}

// checkStateDBOnCommandLine refuses a --statedb or --backup-statedb with
// a password or another secret given on the command line
// (statedb.HoldsSecret), which any user of the machine can read: it
// belongs in --statedb-password-file, the --config file, or PGPASSFILE.
func checkStateDBOnCommandLine(args []string) error {
	for i, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "statedb" && name != "backup-statedb" || !strings.HasPrefix(a, "-") {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		if statedb.HoldsSecret(value) {
			return fmt.Errorf("--%s %s: a password on the command line is readable by every user of the machine; put it in --statedb-password-file, the --config file or PGPASSFILE (a literal @ in a parameter is written %%40)",
				name, statedb.Redact(value))
		}
	}
	return nil
}

// checkNotify checks the notification settings and parses the events.
// They are the WEBAPP's own, not CONFGIT's, as they carry a secret.
func (c *Config) checkNotify() error {
	if c.NotifyURL == "" {
		if c.NotifySecretFile != "" || c.NotifyEventList != "" {
			c.Warnings = append(c.Warnings, "notify-secret-file and notify-events do nothing without notify-url")
		}
		return nil
	}
	u, err := url.Parse(c.NotifyURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Its path and query may be the receiver's secret: show no more
		// of it than its scheme and host.
		if o := redact.Origin(c.NotifyURL); o != "" {
			return fmt.Errorf("--notify-url %s…: want an http or https URL", o)
		}
		return errors.New("--notify-url is no http or https URL")
	}
	if c.NotifySecretFile == "" {
		return errors.New("--notify-url needs --notify-secret-file: receivers tell our notifications from forged ones by their signature")
	}
	if c.NotifyEvents, err = webhook.ParseEvents(c.NotifyEventList); err != nil {
		return fmt.Errorf("--notify-events: %w", err)
	}
	return nil
}

// checkPublicURL checks --public-url: an http or https URL with a host
// and at most a path, which links are made from. Its trailing "/" is
// dropped.
func (c *Config) checkPublicURL() error {
	if c.PublicURL == "" {
		return nil
	}
	// Any "@" is a user part, as in checkReplicaURL.
	if strings.Contains(c.PublicURL, "@") {
		return errors.New("--public-url: want no user or password in it")
	}
	u, err := url.Parse(c.PublicURL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("--public-url %q: want an http or https URL, such as https://lorry.example.org", redact.URLs(c.PublicURL))
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return fmt.Errorf("--public-url %q: want no query or fragment in it", c.PublicURL)
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	return nil
}

// checkReplicaURL checks --replica-url, which /1.0/status shows to
// anyone who may read it: an http or https URL with a host and at most a
// path, and no user or password. Any "@" counts as a user part, whatever
// comes before it: a password holding "/", "?" or "#" ends the authority
// early for a URL parser, but it is still a password, and the error does
// not show it.
func (c *Config) checkReplicaURL() error {
	if c.ReplicaURL == "" {
		return nil
	}
	if strings.Contains(c.ReplicaURL, "@") {
		return errors.New("--replica-url: want no user or password in it: /1.0/status shows it to its readers")
	}
	u, err := url.Parse(c.ReplicaURL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("--replica-url %q: want an http or https URL, such as https://lc1.example.org", c.ReplicaURL)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return fmt.Errorf("--replica-url %q: want no query or fragment in it", c.ReplicaURL)
	}
	return nil
}

// NotifyEventNames lists the events to notify of, in the order of
// statedb.Events.
func (c *Config) NotifyEventNames() []string {
	var out []string
	for _, e := range statedb.Events {
		if c.NotifyEvents[e] {
			out = append(out, e)
		}
	}
	return out
}
