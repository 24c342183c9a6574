package mirror

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"lorrycontroller.dev/lc/redact"
)

// A URL's credentials, a downstream's API token or an upstream's
// clone-with-token, must not reach the command line of git: every user of
// the machine can read any process's arguments. git is given the URL
// without them, and the credentials as the Authorization header of the
// requests to the URL's host, in configuration given by its environment,
// which only the user running it can read.

// credentials splits the user info off url (see splitURL): plain is url
// without it, and config is git configuration ("name=value") that sends
// it with every request to url's host, for an http or https url. A
// password in a url of another transport (ssh, git, an scp-like address)
// is refused: git would hand it to ssh on its command line, and ssh takes
// no password from one. A user alone stays in such a url.
func credentials(rawURL string) (plain string, config []string, err error) {
	u, err := splitURL(rawURL)
	if errors.Is(err, errNoURL) {
		if gitTransport(rawURL) == "ssh" {
			if at := strings.IndexByte(rawURL, '@'); at >= 0 && strings.Contains(rawURL[:at], ":") {
				return "", nil, fmt.Errorf("git address %q has a password, which ssh takes from no address: use a key", redact.URLs(rawURL))
			}
		}
		return rawURL, nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	scheme := strings.ToLower(u.scheme)
	if scheme != "http" && scheme != "https" {
		if u.hasPassword {
			return "", nil, fmt.Errorf("git URL %q has a password, which lorry gives only over http and https: a %s URL would hand it to a command line", redact.URLs(rawURL), u.scheme)
		}
		return rawURL, nil, nil
	}
	if !u.hasUser {
		return rawURL, nil, nil
	}
	token := base64.StdEncoding.EncodeToString([]byte(u.user + ":" + u.password))
	host := u.scheme + "://" + u.hostPort + "/"
	return u.plain(false), []string{
		// An empty value first drops any header that configuration of
		// the repository gave for the host.
		"http." + host + ".extraHeader=",
		"http." + host + ".extraHeader=Authorization: Basic " + token,
	}, nil
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
