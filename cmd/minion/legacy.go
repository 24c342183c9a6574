package main

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"lorrycontroller/flagconf"
)

// Keys of the original Python MINION's configuration file that mean
// nothing here. A file written for it is accepted with a warning for each.
// Keys that are flags here too are read as flags.
var oldIgnored = map[string]string{
	"webapp-timeout":       "each request to the WEBAPP times out after " + httpTimeout.String(),
	"proxy-config":         "set http_proxy and https_proxy in the unit's environment instead",
	"log":                  "logs go to standard error, which systemd sends to the journal",
	"log-max":              "logs go to standard error, which systemd sends to the journal",
	"log-keep":             "logs go to standard error, which systemd sends to the journal",
	"log-mode":             "logs go to standard error, which systemd sends to the journal",
	"trace":                "an option of the original program's framework",
	"output":               "an option of the original program's framework",
	"dump-memory-profile":  "an option of the original program's framework",
	"memory-dump-interval": "an option of the original program's framework",
}

// oldWebapp collects the original webapp-host and webapp-port keys, which
// together are --webapp-url.
type oldWebapp struct{ host, port string }

func (o *oldWebapp) options() flagconf.Options {
	return flagconf.Options{
		Ignored: oldIgnored,
		Custom: map[string]func(string) error{
			"webapp-host": func(v string) error { o.host = v; return nil },
			"webapp-port": func(v string) error {
				if n, err := strconv.Atoi(v); err != nil || n <= 0 || n > 65535 {
					return fmt.Errorf("%q is not a port number", v)
				}
				o.port = v
				return nil
			},
		},
	}
}

// apply sets *webappURL from webapp-host and webapp-port, unless
// --webapp-url was given on the command line or in the file. Either key
// alone keeps the other half of the default URL.
func (o *oldWebapp) apply(fs *flag.FlagSet, webappURL *string) error {
	if o.host == "" && o.port == "" {
		return nil
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "webapp-url" })
	if set {
		return nil
	}
	u, err := url.Parse(*webappURL)
	if err != nil {
		return fmt.Errorf("--webapp-url %q: %w", *webappURL, err)
	}
	host, port := u.Hostname(), u.Port()
	if o.host != "" {
		host = o.host
	}
	if o.port != "" {
		port = o.port
	}
	u.Host = net.JoinHostPort(host, port)
	*webappURL = u.String()
	return nil
}
