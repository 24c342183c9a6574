package redact

import "testing"

func TestURLs(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "password", in: "clone https://u:p@h/x failed", want: "clone https://***@h/x failed"},
		{name: "token only", in: "ssh://tok@h/x", want: "ssh://***@h/x"},
		{name: "two", in: "a http://x:y@h b https://z@k/", want: "a http://***@h b https://***@k/"},
		{name: "none", in: "https://h/x and git@h:x", want: "https://h/x and git@h:x"},
	}
	for _, tc := range tests {
		if got := URLs(tc.in); got != tc.want {
			t.Errorf("%s: URLs(%q) = %q; want %q", tc.name, tc.in, got, tc.want)
		}
	}
}
