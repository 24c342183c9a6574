package mirror

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// A URL's credentials, a downstream's API token or an upstream's
// clone-with-token, must not reach the command line of git: every user of
// the machine can read any process's arguments. git is given the URL
// without them, and the credentials as the Authorization header of the
// requests to the URL's host, in configuration given by its environment,
// which only the user running it can read.

// credentials splits the user info off an http or https url: plain is url
// without it, and config is git configuration ("name=value") that sends
// it with every request to url's host. Any other url is returned as it is,
// with no configuration.
func credentials(rawURL string) (plain string, config []string) {
	scheme := strings.ToLower(rawURL[:schemeLen(rawURL)])
	if scheme != "http" && scheme != "https" {
		return rawURL, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return rawURL, nil
	}
	pass, _ := u.User.Password()
	token := base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pass))
	u.User = nil
	host := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/"}).String()
	return u.String(), []string{
		// An empty value first drops any header that configuration of
		// the repository gave for the host.
		"http." + host + ".extraHeader=",
		"http." + host + ".extraHeader=Authorization: Basic " + token,
	}
}

// configEnv is the environment that gives git the configuration kv
// ("name=value" each), as if by -c options.
func configEnv(kv []string) []string {
	if len(kv) == 0 {
		return nil
	}
	env := []string{"GIT_CONFIG_COUNT=" + strconv.Itoa(len(kv))}
	for i, c := range kv {
		k, v, _ := strings.Cut(c, "=")
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, k), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, v))
	}
	return env
}
