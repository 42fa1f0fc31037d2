package review

import (
	"bytes"
	"fmt"
	"html/template"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/display"
)

// page is the review as one self-contained HTML page (no script, no
// external resource): html/template escapes every value, and box-made
// text goes through display.Text first, as on a terminal.
var page = template.Must(template.New("review").Funcs(template.FuncMap{
	"safe": func(s string) string { return display.Text(s, maxShownBytes) },
	"at":   func(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") },
	"fields": func(ev audit.Event) string {
		return fields(ev.Fields)
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>corral review: {{safe .Box}} {{safe .Session}}</title>
<style>body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:60em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}.denied{color:#b00;font-weight:bold}code{background:#f4f4f4}</style>
</head><body>
<h1>Session {{safe .Session}} of box {{safe .Box}}</h1>
<ul><li>agent: {{if .Agent}}{{safe .Agent}}{{else}}(none recorded){{end}}</li>
<li>started: {{at .Started}}</li>
<li>{{if .Ended}}ended: {{at .Ended}}{{if .Exit}} (exit {{.Exit}}){{end}}{{else}}still running{{end}}</li></ul>
<h2>Network</h2>
{{if .Egress}}<table><tr><th>host</th><th>port</th><th>verdict</th><th>connections</th><th>reason</th></tr>
{{range .Egress}}<tr><td>{{safe .Host}}</td><td>{{.Port}}</td><td>{{if .Allowed}}allowed{{else}}<span class="denied">denied</span>{{end}}</td><td>{{.Count}}</td><td>{{safe (printf "%s" .Reason)}}</td></tr>
{{end}}</table><p>Other sessions of the box running at the same time are counted too.</p>{{else}}<p>No connections.</p>{{end}}
<h2>Requests from the box</h2>
{{if .Requests}}<ul>{{range .Requests}}<li>{{at .Time}} <code>{{safe .Request}}</code>: “{{safe .Why}}”{{if .Who}} (says {{safe .Who.Exe}}, pid {{.Who.PID}}){{end}}</li>{{end}}</ul>{{else}}<p>None.</p>{{end}}
<h2>Events</h2>
{{if .Events}}<ul>{{range .Events}}<li>{{at .Time}} <b>{{safe (printf "%s" .Kind)}}</b>{{fields .}}</li>{{end}}</ul>{{else}}<p>None.</p>{{end}}
<h2>Files changed in the work tree</h2>
<p>By change time, which the host's kernel sets (anything else on the host that changed a file then is here too).</p>
{{if .Files}}<ul>{{range .Files}}<li><code>{{safe .Path}}</code> ({{.Size}} bytes, {{at .Changed}})</li>{{end}}</ul>{{else}}<p>None.</p>{{end}}
{{if .Truncated}}<p>(The lists are cut at their caps.)</p>{{end}}
</body></html>
`))

// HTML renders the report as one self-contained page.
func (r Report) HTML() (string, error) {
	var b bytes.Buffer
	if err := page.Execute(&b, r); err != nil {
		return "", fmt.Errorf("rendering the review of box %s: %w", display.Text(r.Box, 64), err)
	}
	return b.String(), nil
}
