package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"lorrycontroller.dev/lc/secretfile"
	"lorrycontroller.dev/lc/webappconf"
)

// callMain is "lorry-controller-webapp call": one request to a running
// WEBAPP, printing the answer. The timer units use it, so that they need
// no HTTP client of their own and find the WEBAPP at the address its own
// configuration file gives. It returns the exit code: 0 for an answer
// under 400, 1 for a failure, 2 for bad usage.
func callMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lorry-controller-webapp call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: lorry-controller-webapp call [flags] METHOD PATH [key=value...]

Make one request to a running WEBAPP, form-encoding the key=value
parameters, and print the answer. The WEBAPP is found at --url, else at
the --listen address of the --config file, else at the default address.
It sends the token in --token-file, else in the admin-token-file of the
--config file, if any. An error answer goes to standard error, and the
exit code is 1.

Flags:
`)
		fs.PrintDefaults()
	}
	base := fs.String("url", "", "base `URL` of the WEBAPP")
	configFile := fs.String("config", "", "the WEBAPP's configuration `file`, to find its --listen address")
	timeout := fs.Duration("timeout", time.Hour, "give up after this `duration`")
	quiet := fs.Bool("quiet", false, "print the answer only if it is an error")
	tokenFile := fs.String("token-file", "", "send the token in this `file` (an admin's, to change anything)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() < 2 {
		fs.Usage()
		return 2
	}
	method, path, rest := strings.ToUpper(fs.Arg(0)), fs.Arg(1), fs.Args()[2:]
	form, err := callForm(rest)
	if err != nil {
		fmt.Fprintln(stderr, "lorry-controller-webapp call:", err)
		return 2
	}
	token, err := callToken(*configFile, *tokenFile, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "lorry-controller-webapp call:", err)
		return 2
	}
	if *base == "" {
		if *base, err = callBase(*configFile, stderr); err != nil {
			fmt.Fprintln(stderr, "lorry-controller-webapp call:", err)
			return 2
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := callRequest(ctx, method, *base, path, form, token)
	if err != nil {
		fmt.Fprintln(stderr, "lorry-controller-webapp call:", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "lorry-controller-webapp call:", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		fmt.Fprintf(stderr, "lorry-controller-webapp call: %s %s: %s: %s\n", method, path, resp.Status, bytes.TrimSpace(answer))
		return 1
	}
	out := stdout
	if *quiet {
		out = io.Discard
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		fmt.Fprintln(stderr, "lorry-controller-webapp call: read the answer:", err)
		return 1
	}
	return 0
}

// callForm is the parameters given as key=value arguments.
func callForm(args []string) (url.Values, error) {
	form := url.Values{}
	for _, kv := range args {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want key=value", kv)
		}
		form.Add(k, v)
	}
	return form, nil
}

// callToken is the token to send: the one in tokenFile, else in the
// admin-token-file of configFile, else none. A warning about the file's
// permissions goes to stderr.
func callToken(configFile, tokenFile string, stderr io.Writer) (string, error) {
	if configFile != "" && tokenFile == "" {
		cfg, err := webappconf.Parse([]string{"--config", configFile}, io.Discard)
		if err != nil {
			return "", err
		}
		tokenFile = cfg.AdminTokenFile
	}
	if tokenFile == "" {
		return "", nil
	}
	token, warning, err := secretfile.Read(tokenFile)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	if warning != "" {
		fmt.Fprintln(stderr, "lorry-controller-webapp call: warning:", warning)
	}
	return token, nil
}

// callBase is the base URL of the WEBAPP listening at the --listen
// address of configFile, or at the default address if there is none.
func callBase(configFile string, stderr io.Writer) (string, error) {
	listen := ""
	if configFile != "" {
		cfg, err := webappconf.Parse([]string{"--config", configFile}, stderr)
		if err != nil {
			return "", err
		}
		listen = cfg.Listen
	} else {
		cfg, _ := webappconf.Parse(nil, io.Discard)
		listen = cfg.Listen
	}
	return urlOf(listen)
}

// callRequest is the request for method and path under base: form is
// its query for a GET, its form-encoded body otherwise.
func callRequest(ctx context.Context, method, base, path string, form url.Values, token string) (*http.Request, error) {
	target := strings.TrimSuffix(base, "/") + "/" + strings.TrimPrefix(path, "/")
	var body io.Reader
	if method == http.MethodGet {
		if len(form) > 0 {
			target += "?" + form.Encode()
		}
	} else {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req, nil
}

// urlOf is the base URL that reaches a WEBAPP listening on addr from the
// same machine.
func urlOf(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--listen %q: %w", addr, err)
	}
	if port == "0" {
		return "", fmt.Errorf("--listen %q picks a port at random: give --url", addr)
	}
	switch ip := net.ParseIP(host); {
	case host == "":
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified() && ip.To4() != nil:
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}
