package main

import (
	"fmt"
	"net/url"
	"strings"

	"lorrycontroller.dev/lc/redact"
)

// checkPublicURL checks --public-url: an http or https URL with a host
// and at most a path, which links are made from. Its trailing "/" is
// dropped.
func (c *Config) checkPublicURL() error {
	if c.PublicURL == "" {
		return nil
	}
	u, err := url.Parse(c.PublicURL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("--public-url %q: want an http or https URL, such as https://lorry.example.org", redact.URLs(c.PublicURL))
	case u.User != nil:
		return fmt.Errorf("--public-url %q: want no user or password in it", redact.URLs(c.PublicURL))
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return fmt.Errorf("--public-url %q: want no query or fragment in it", c.PublicURL)
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	return nil
}
