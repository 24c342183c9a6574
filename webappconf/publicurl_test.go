package webappconf

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestPublicURLFlag(t *testing.T) {
	tests := []struct {
		name, value, want, wantErr string
	}{
		{name: "unset"},
		{name: "https", value: "https://lorry.example.org", want: "https://lorry.example.org"},
		{name: "http with a port and a path", value: "http://lorry.example.org:8080/lc/", want: "http://lorry.example.org:8080/lc"},
		{name: "no scheme", value: "lorry.example.org", wantErr: "want an http or https URL"},
		{name: "another scheme", value: "ftp://lorry.example.org", wantErr: "want an http or https URL"},
		{name: "no host", value: "https:///x", wantErr: "want an http or https URL"},
		{name: "user", value: "https://admin:SEKRIT@lorry.example.org", wantErr: "want no user or password"},
		{name: "query", value: "https://lorry.example.org/?a=b", wantErr: "want no query"},
		{name: "fragment", value: "https://lorry.example.org/#top", wantErr: "want no query or fragment"},
	}
	// A user and a password holding each printable character: refused,
	// and the error shows neither.
	for c := byte(' '); c <= '~'; c++ {
		tests = append(tests, struct{ name, value, want, wantErr string }{
			name:    fmt.Sprintf("password with %q", c),
			value:   "https://ad" + string(c) + "min:SEK" + string(c) + "RIT@lorry.example.org/",
			wantErr: "want no user or password",
		})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			if tc.value != "" {
				args = []string{"--public-url", tc.value}
			}
			cfg, err := Parse(args, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "SEK") || strings.Contains(err.Error(), "RIT") {
					t.Fatalf("--public-url %q: got %v; want an error with %q, without the password", tc.value, err, tc.wantErr)
				}
				return
			}
			if err != nil || cfg.PublicURL != tc.want {
				t.Errorf("--public-url %q: got %q, %v; want %q", tc.value, cfg.PublicURL, err, tc.want)
			}
		})
	}
}

func TestReplicaURLFlag(t *testing.T) {
	tests := []struct {
		name, value, wantErr string
	}{
		{name: "unset"},
		{name: "https", value: "https://lc1.example.org"},
		{name: "http with a port and a path", value: "http://10.0.0.1:12765/lc"},
		{name: "no scheme", value: "lc1.example.org", wantErr: "want an http or https URL"},
		{name: "another scheme", value: "ftp://lc1.example.org", wantErr: "want an http or https URL"},
		{name: "no host", value: "https:///x", wantErr: "want an http or https URL"},
		{name: "user alone", value: "https://admin@lc1.example.org", wantErr: "want no user or password"},
		{name: "query", value: "https://lc1.example.org/?a=b", wantErr: "want no query"},
		{name: "fragment", value: "https://lc1.example.org/#top", wantErr: "want no query or fragment"},
	}
	// A user and a password holding each printable character: refused,
	// and the error shows neither.
	for c := byte(' '); c <= '~'; c++ {
		for _, scheme := range []string{"http", "https", "HTTP"} {
			tests = append(tests, struct{ name, value, wantErr string }{
				name:    fmt.Sprintf("%s password with %q", scheme, c),
				value:   scheme + "://us" + string(c) + "er:SEK" + string(c) + "RIT@lc1.example.org:8080/",
				wantErr: "want no user or password",
			})
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			if tc.value != "" {
				args = []string{"--replica-url", tc.value}
			}
			cfg, err := Parse(args, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "SEK") {
					t.Fatalf("--replica-url %q: got %v; want an error with %q, without the password", tc.value, err, tc.wantErr)
				}
				return
			}
			if err != nil || cfg.ReplicaURL != tc.value {
				t.Errorf("--replica-url %q: got %q, %v; want it as it is", tc.value, cfg.ReplicaURL, err)
			}
		})
	}
}
