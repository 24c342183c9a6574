// Package redact hides credentials in text that is shown to people: URLs
// with a user name or password, wherever they appear in a message.
package redact

import "regexp"

var urlCredentials = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@`)

// URLs replaces the user information of every URL in s with "***".
func URLs(s string) string {
	return urlCredentials.ReplaceAllString(s, "${1}***@")
}
