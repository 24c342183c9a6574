// Package templates holds the WEBAPP's HTML templates, embedded so that the
// binary carries everything it serves.
package templates

import (
	"embed"
	"html/template"
	"time"
)

//go:embed *.html
var files embed.FS

// Pages are all templates, parsed once at start.
var Pages = template.Must(template.New("").Funcs(template.FuncMap{
	"unixtime": func(t int64) string { return time.Unix(t, 0).UTC().Format("2006-01-02 15:04:05 UTC") },
	"deref": func(p *int64) any {
		if p == nil {
			return "-"
		}
		return *p
	},
}).ParseFS(files, "*.html"))
