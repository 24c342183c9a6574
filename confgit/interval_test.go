package confgit

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseInterval(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want time.Duration
	}{
		{name: "JSON integer", in: json.Number("3600"), want: time.Hour},
		{name: "JSON number with zero fraction", in: json.Number("60.0"), want: time.Minute},
		{name: "JSON exponent", in: json.Number("1e3"), want: 1000 * time.Second},
		{name: "float64", in: float64(90), want: 90 * time.Second},
		{name: "int", in: 5, want: 5 * time.Second},
		{name: "int64", in: int64(7), want: 7 * time.Second},
		{name: "digits", in: "86400", want: 24 * time.Hour},
		{name: "digits with spaces", in: " 30 ", want: 30 * time.Second},
		{name: "seconds unit", in: "45s", want: 45 * time.Second},
		{name: "upper seconds unit", in: "45S", want: 45 * time.Second},
		{name: "minutes", in: "90m", want: 90 * time.Minute},
		{name: "upper minutes", in: "90M", want: 90 * time.Minute},
		{name: "hours", in: "6h", want: 6 * time.Hour},
		{name: "upper hours", in: "6H", want: 6 * time.Hour},
		{name: "days", in: "2d", want: 48 * time.Hour},
		{name: "upper days", in: "2D", want: 48 * time.Hour},
		{name: "ISO hours", in: "PT6H", want: 6 * time.Hour},
		{name: "ISO day", in: "P1D", want: 24 * time.Hour},
		{name: "ISO day and time", in: "P1DT2H30M", want: 26*time.Hour + 30*time.Minute},
		{name: "ISO minutes and seconds", in: "PT1M30S", want: 90 * time.Second},
		{name: "ISO weeks", in: "P2W", want: 14 * 24 * time.Hour},
		{name: "ISO lower case", in: "pt6h", want: 6 * time.Hour},
		{name: "ISO seconds", in: "PT3600S", want: time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseInterval(tc.in)
			if err != nil {
				t.Fatalf("ParseInterval(%#v): got error %v, want %v", tc.in, err, tc.want)
			}
			if got != tc.want {
				t.Errorf("ParseInterval(%#v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseIntervalRejects(t *testing.T) {
	tests := []struct {
		name    string
		in      any
		wantErr string
	}{
		{name: "zero number", in: json.Number("0"), wantErr: "not positive"},
		{name: "negative number", in: json.Number("-5"), wantErr: "not positive"},
		{name: "zero string", in: "0", wantErr: "not positive"},
		{name: "zero with unit", in: "0h", wantErr: "not positive"},
		{name: "zero ISO", in: "PT0S", wantErr: "not positive"},
		{name: "negative string", in: "-5", wantErr: "not a number of seconds"},
		{name: "fraction", in: json.Number("1.5"), wantErr: "whole number"},
		{name: "float fraction", in: 0.5, wantErr: "whole number"},
		{name: "empty", in: "", wantErr: "empty"},
		{name: "blank", in: "  ", wantErr: "empty"},
		{name: "word", in: "daily", wantErr: "not a number of seconds"},
		{name: "unknown unit", in: "6x", wantErr: "not a number of seconds"},
		{name: "weeks unit is not a short unit", in: "2w", wantErr: "not a number of seconds"},
		{name: "fractional unit", in: "1.5h", wantErr: "not a number of seconds"},
		{name: "unit without number", in: "h", wantErr: "not a number of seconds"},
		{name: "space inside", in: "6 h", wantErr: "not a number of seconds"},
		{name: "bare P", in: "P", wantErr: "ISO 8601"},
		{name: "bare PT", in: "PT", wantErr: "ISO 8601"},
		{name: "T without time", in: "P1DT", wantErr: "ISO 8601"},
		{name: "ISO fraction", in: "PT0.5S", wantErr: "ISO 8601"},
		{name: "ISO years", in: "P1Y", wantErr: "ISO 8601"},
		{name: "ISO months", in: "P1M", wantErr: "ISO 8601"},
		{name: "ISO out of order", in: "PT1S1M", wantErr: "ISO 8601"},
		{name: "ISO negative", in: "-PT1H", wantErr: "not a number of seconds"},
		{name: "huge digits", in: "99999999999999999999", wantErr: "too large"},
		{name: "huge days", in: "9999999999d", wantErr: "too large"},
		{name: "huge ISO", in: "P9999999999W", wantErr: "too large"},
		{name: "huge ISO sum", in: "P15000000WT9000000000S", wantErr: "too large"},
		{name: "huge number", in: json.Number("1e30"), wantErr: "too large"},
		{name: "boolean", in: true, wantErr: "not a boolean"},
		{name: "null", in: nil, wantErr: "not null"},
		{name: "list", in: []any{}, wantErr: "not a list"},
		{name: "object", in: map[string]any{}, wantErr: "not an object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseInterval(tc.in)
			if err == nil {
				t.Fatalf("ParseInterval(%#v) = %v, want an error containing %q", tc.in, got, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseInterval(%#v): got error %q, want it to contain %q", tc.in, err, tc.wantErr)
			}
		})
	}
}
