package main

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// urlList is --webapp-url: WEBAPP URLs given by repeating the flag, or
// the key of the --config file, by separating them with commas, or both.
// The default stands until the first value given replaces it; every later
// value adds to it. A URL given twice counts once.
type urlList struct {
	urls *[]string
	set  bool
}

func (l *urlList) String() string {
	if l == nil || l.urls == nil {
		return ""
	}
	return strings.Join(*l.urls, ",")
}

func (l *urlList) Set(v string) error {
	if !l.set {
		*l.urls, l.set = nil, true
	}
	for _, u := range strings.Split(v, ",") {
		if u = strings.TrimSpace(u); u != "" && !slices.Contains(*l.urls, u) {
			*l.urls = append(*l.urls, u)
		}
	}
	return nil
}

// checkWebappURLs makes sure that there is a WEBAPP to ask, and that each
// URL is one.
func checkWebappURLs(urls []string) error {
	if len(urls) == 0 {
		return fmt.Errorf("--webapp-url: want at least one http or https URL")
	}
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--webapp-url %q: want an http or https URL", s)
		}
	}
	return nil
}
