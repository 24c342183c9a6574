package confgit

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"lorrycontroller.dev/lc/lorryspec"
)

// maxSeconds keeps every interval representable as a time.Duration.
const maxSeconds = math.MaxInt64 / int64(time.Second)

var (
	unitRE = regexp.MustCompile(`^([0-9]+)([smhdSMHD])$`)
	// Years and months have no fixed length, so they are left out on
	// purpose rather than guessed.
	isoRE = regexp.MustCompile(`^[Pp](?:([0-9]+)[Ww])?(?:([0-9]+)[Dd])?(?:([Tt])(?:([0-9]+)[Hh])?(?:([0-9]+)[Mm])?(?:([0-9]+)[Ss])?)?$`)
)

var unitSeconds = map[byte]int64{'s': 1, 'm': 60, 'h': 3600, 'd': 86400}

// ParseInterval reads an INTERVAL as written in lorry-controller.conf: a
// JSON number of whole seconds, a string of digits (seconds), "<n><unit>"
// with unit s, m, h or d in any case ("6H", "90m"), or an ISO 8601 duration
// made of weeks, days, hours, minutes and seconds ("PT6H", "P1D",
// "P1DT2H30M"). Fractions, years and months are rejected. The result must be
// positive.
func ParseInterval(v any) (time.Duration, error) {
	var secs int64
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		if err != nil {
			f, ferr := x.Float64()
			if ferr != nil {
				return 0, fmt.Errorf("interval %s is not a number", x)
			}
			n, err = wholeSeconds(f)
			if err != nil {
				return 0, err
			}
		}
		secs = n
	case float64:
		n, err := wholeSeconds(x)
		if err != nil {
			return 0, err
		}
		secs = n
	case int:
		secs = int64(x)
	case int64:
		secs = x
	case string:
		n, err := parseIntervalString(x)
		if err != nil {
			return 0, err
		}
		secs = n
	default:
		return 0, fmt.Errorf("interval must be a number of seconds or a string such as \"6h\" or \"PT6H\", not %s", lorryspec.KindOf(v))
	}
	if secs <= 0 {
		return 0, fmt.Errorf("interval %v is not positive", v)
	}
	if secs > maxSeconds {
		return 0, fmt.Errorf("interval %v is too large", v)
	}
	return time.Duration(secs) * time.Second, nil
}

func wholeSeconds(f float64) (int64, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("interval %v is not a number", f)
	}
	if f != math.Trunc(f) {
		return 0, fmt.Errorf("interval %v is not a whole number of seconds", f)
	}
	if f > float64(maxSeconds) {
		return 0, fmt.Errorf("interval %v is too large", f)
	}
	if f <= 0 {
		return 0, nil
	}
	return int64(f), nil
}

var errOverflow = errors.New("too large")

func parseIntervalString(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("interval is an empty string")
	}
	if allDigits(t) {
		n, err := atoi(t)
		if err != nil {
			return 0, fmt.Errorf("interval %q is too large", s)
		}
		return n, nil
	}
	if m := unitRE.FindStringSubmatch(t); m != nil {
		n, err := atoi(m[1])
		if err == nil {
			n, err = mul(n, unitSeconds[strings.ToLower(m[2])[0]])
		}
		if err != nil {
			return 0, fmt.Errorf("interval %q is too large", s)
		}
		return n, nil
	}
	if t[0] == 'P' || t[0] == 'p' {
		n, err := parseISO(t)
		if errors.Is(err, errOverflow) {
			return 0, fmt.Errorf("interval %q is too large", s)
		}
		if err != nil {
			return 0, fmt.Errorf("interval %q is not an ISO 8601 duration of the form PnWnDTnHnMnS (no fractions, years or months)", s)
		}
		return n, nil
	}
	return 0, fmt.Errorf("interval %q is not a number of seconds, <n><unit> with unit s, m, h or d, or an ISO 8601 duration such as PT6H", s)
}

func parseISO(t string) (int64, error) {
	m := isoRE.FindStringSubmatch(t)
	if m == nil {
		return 0, errors.New("not an ISO 8601 duration")
	}
	weeks, days, tee, hours, mins, secs := m[1], m[2], m[3], m[4], m[5], m[6]
	if weeks == "" && days == "" && hours == "" && mins == "" && secs == "" {
		return 0, errors.New("empty ISO 8601 duration")
	}
	if tee != "" && hours == "" && mins == "" && secs == "" {
		return 0, errors.New(`the time designator "T" has no time part after it`)
	}
	var total int64
	for _, part := range []struct {
		digits string
		unit   int64
	}{{weeks, 7 * 86400}, {days, 86400}, {hours, 3600}, {mins, 60}, {secs, 1}} {
		if part.digits == "" {
			continue
		}
		n, err := atoi(part.digits)
		if err == nil {
			n, err = mul(n, part.unit)
		}
		if err == nil && total > maxSeconds-n {
			err = errOverflow
		}
		if err != nil {
			return 0, errOverflow
		}
		total += n
	}
	return total, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func atoi(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > maxSeconds {
		return 0, errOverflow
	}
	return n, nil
}

func mul(n, unit int64) (int64, error) {
	if n > maxSeconds/unit {
		return 0, errOverflow
	}
	return n * unit, nil
}
