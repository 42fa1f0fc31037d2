package packaging

import (
	"reflect"
	"strings"
	"testing"
)

func TestParsePlist(t *testing.T) {
	const doc = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<!-- a comment -->
	<key>s</key><string>a &amp; b</string>
	<key>t</key><true/>
	<key>f</key><false/>
	<key>i</key><integer>42</integer>
	<key>a</key><array><string>x</string><dict><key>k</key><real>1.5</real></dict></array>
	<key>e</key><dict/>
</dict>
</plist>`
	got, err := parsePlist(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"s": "a & b", "t": true, "f": false, "i": int64(42),
		"a": []any{"x", map[string]any{"k": 1.5}},
		"e": map[string]any{},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
}

func TestParsePlistRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"duplicate key": `<plist><dict><key>a</key><true/><key>a</key><false/></dict></plist>`,
		"key no value":  `<plist><dict><key>a</key></dict></plist>`,
		"value no key":  `<plist><dict><string>x</string></dict></plist>`,
		"not a plist":   `<html></html>`,
		"array at top":  `<plist><array/></plist>`,
		"unknown":       `<plist><dict><key>a</key><bogus/></dict></plist>`,
		"truncated":     `<plist><dict><key>a</key><string>x</string>`,
		"bad integer":   `<plist><dict><key>a</key><integer>x</integer></dict></plist>`,
	} {
		if _, err := parsePlist(strings.NewReader(doc)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
