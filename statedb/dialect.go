package statedb

import (
	"regexp"
	"strconv"
	"strings"
)

// Only handout.go, pghandout.go, jobupdate.go and jobend.go still rely on
// this; it goes once they are written in each dialect. Every other
// statement is written in the SQL that both backends read alike, or in
// each driver's own (dialectSQL), and pgSQL leaves it as it is
// (TestEveryStatementPrepares checks both).
//
// pgSQL turns a statement of those files into PostgreSQL's spelling when
// it is prepared.
//
// What pgSQL changes:
//
//   - placeholders: ?NNN becomes $NNN, and a bare ? the next number after
//     the largest so far, as SQLite numbers them;
//   - MIN and MAX of two or more values become LEAST and GREATEST (MIN
//     and MAX of one are the aggregates in both);
//   - json_each(x) becomes lc_json_each(x), a function of the PostgreSQL
//     schema with SQLite's columns key and value, over an array or an
//     object given as text;
//   - the temp schema is pg_temp; SQLite's query-planner hints (INDEXED
//     BY, NOT INDEXED) and table options (WITHOUT ROWID) go.
//
// String literals are left alone.

var (
	indexedBy    = regexp.MustCompile(`\s+(INDEXED BY \w+|NOT INDEXED)\b`)
	withoutRowid = regexp.MustCompile(`\)\s*WITHOUT ROWID`)
	tempSchema   = regexp.MustCompile(`\btemp\.`)
	jsonEach     = regexp.MustCompile(`\bjson_each\(`)
)

// pgSQL is query in PostgreSQL's spelling.
func pgSQL(query string) string {
	q := mapCode(query, func(code string) string {
		code = indexedBy.ReplaceAllString(code, "")
		code = withoutRowid.ReplaceAllString(code, ")")
		code = tempSchema.ReplaceAllString(code, "pg_temp.")
		return jsonEach.ReplaceAllString(code, "lc_json_each(")
	})
	return placeholders(leastGreatest(q))
}

// mapCode applies f to the parts of query outside string literals.
func mapCode(query string, f func(string) string) string {
	var b strings.Builder
	for len(query) > 0 {
		i := strings.IndexByte(query, '\'')
		if i < 0 {
			b.WriteString(f(query))
			break
		}
		b.WriteString(f(query[:i]))
		j := literalEnd(query, i)
		b.WriteString(query[i:j])
		query = query[j:]
	}
	return b.String()
}

// literalEnd is the index just past the string literal that starts at
// query[i], with its doubled quotes.
func literalEnd(query string, i int) int {
	for j := i + 1; j < len(query); j++ {
		if query[j] == '\'' {
			if j+1 < len(query) && query[j+1] == '\'' {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(query)
}

// placeholders numbers query's placeholders as PostgreSQL does.
func placeholders(query string) string {
	var b strings.Builder
	largest := 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		if c == '\'' {
			j := literalEnd(query, i)
			b.WriteString(query[i:j])
			i = j - 1
			continue
		}
		if c != '?' {
			b.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(query) && query[j] >= '0' && query[j] <= '9' {
			j++
		}
		n := largest + 1
		if j > i+1 {
			n, _ = strconv.Atoi(query[i+1 : j])
		}
		largest = max(largest, n)
		b.WriteString("$" + strconv.Itoa(n))
		i = j - 1
	}
	return b.String()
}

// leastGreatest turns MIN and MAX of several values into LEAST and
// GREATEST.
func leastGreatest(query string) string {
	for _, fn := range [][2]string{{"MIN(", "LEAST("}, {"MAX(", "GREATEST("}} {
		from := 0
		for {
			i := strings.Index(query[from:], fn[0])
			if i < 0 {
				break
			}
			i += from
			from = i + len(fn[0])
			if i > 0 && isWord(query[i-1]) {
				continue
			}
			if topLevelCommas(query[from:]) > 0 {
				query = query[:i] + fn[1] + query[from:]
				from = i + len(fn[1])
			}
		}
	}
	return query
}

func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// topLevelCommas counts the commas in s before the parenthesis that closes
// the call s starts inside, outside any nested call.
func topLevelCommas(s string) int {
	depth, n := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				return n
			}
			depth--
		case ',':
			if depth == 0 {
				n++
			}
		case '\'':
			i = literalEnd(s, i) - 1
		}
	}
	return n
}
