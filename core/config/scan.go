package config

import "fmt"

// MaxFileSize caps a config file: far above any real config, small enough
// that the parser's work on it is bounded.
const MaxFileSize = 256 << 10

// MaxNesting caps how deep a config file may nest: arrays, inline tables
// and the segments of a dotted key or table header together. The schema
// needs 3; the cap is checked before the TOML parser runs, because the
// parser's cost grows with depth faster than with size (5,000 nested
// inline tables take gigabytes; a dotted key of 4,000 segments takes
// seconds, of 16,000 minutes).
const MaxNesting = 32

// checkNesting scans TOML text without parsing it and fails when it nests
// deeper than max: the segments of the current table header, plus those of
// the current dotted key, plus the open arrays and inline tables. It skips
// strings and comments as TOML defines them, so text inside a string
// never counts; on valid TOML it agrees with the parser, and on invalid
// TOML the parser stops at the first error, before any nesting the scan
// did not see. FuzzCheckNesting checks that whatever passes decodes no
// deeper than max.
//
// Dots are counted in key and value position alike (a value holds at most
// one dot outside a string, in a float or a time), so the count may be one
// too high per value, never too low.
func checkNesting(data []byte, max int) *ParseError {
	var (
		line    = 1
		base    = 0   // levels opened by the last table header
		dots    = 0   // dots in the current key path (or value)
		afterEq bool  // at depth 0: a '=' was seen on this line (so '[' opens a value)
		saved   []int // dots at each open bracket, restored at ',' and at its close
	)
	over := func() *ParseError {
		return &ParseError{Line: line, Err: fmt.Errorf("nested more than %d deep", max)}
	}
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\n':
			line++
			if len(saved) == 0 {
				dots, afterEq = 0, false
			}
		case '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			i = skipString(data, i, &line)
		case '=':
			if len(saved) == 0 {
				afterEq = true
			}
		case '[':
			if len(saved) == 0 && !afterEq {
				// A table header: [a.b] opens two levels, [[a.b]] three
				// (the array of tables and its element).
				levels := 1
				if i+1 < len(data) && data[i+1] == '[' {
					levels, i = 2, i+1
				}
				i, levels = scanHeader(data, i+1, levels, &line)
				base, dots = levels, 0
				if base+1 > max {
					return over()
				}
				continue
			}
			fallthrough
		case '{':
			saved = append(saved, dots)
			if base+len(saved)+dots+1 > max {
				return over()
			}
		case ']', '}':
			if n := len(saved); n > 0 {
				dots, saved = saved[n-1], saved[:n-1]
			}
		case ',':
			if n := len(saved); n > 0 {
				dots = saved[n-1]
			}
		case '.':
			dots++
			if base+len(saved)+dots+1 > max {
				return over()
			}
		}
	}
	return nil
}

// scanHeader reads a table header from data[i] (just past its opening
// brackets) to its closing bracket, adding a level per dot outside quoted
// key segments. It returns the index of the last byte read.
func scanHeader(data []byte, i, levels int, line *int) (int, int) {
	for ; i < len(data); i++ {
		switch data[i] {
		case '"', '\'':
			i = skipString(data, i, line)
		case '.':
			levels++
		case ']':
			if i+1 < len(data) && data[i+1] == ']' {
				i++
			}
			return i, levels
		case '\n':
			return i - 1, levels // unterminated: the parser's error
		}
	}
	return i, levels
}

// skipString returns the index of the last byte of the string that starts
// at data[i], counting the newlines it spans. Basic strings ("…") honour
// backslash escapes; literal strings ('…') do not; tripled quotes start a
// multi-line string. An unterminated string ends the scan: the parser
// refuses the file there.
func skipString(data []byte, i int, line *int) int {
	q := data[i]
	multi := i+2 < len(data) && data[i+1] == q && data[i+2] == q
	if multi {
		i += 3
	} else {
		i++
	}
	for ; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '\\' && q == '"':
			i++ // the escaped byte, which may be a quote or a newline
			if i < len(data) && data[i] == '\n' {
				*line++
			}
		case c == '\n':
			if !multi {
				return i - 1 // unterminated: the parser's error; the caller counts the newline
			}
			*line++
		case c == q && !multi:
			return i
		case c == q && i+2 < len(data) && data[i+1] == q && data[i+2] == q:
			// A multi-line string may end with up to two more quotes
			// ("""a""""" is `a""`); they are part of the string.
			i += 2
			for k := 0; k < 2 && i+1 < len(data) && data[i+1] == q; k++ {
				i++
			}
			return i
		}
	}
	return i
}

// CheckNesting reports TOML that nests deeper than max, before a parser
// sees it, for other TOML corral reads from a box (core/toolreg reads
// cargo's config files from a golden image).
func CheckNesting(data []byte, max int) error {
	if e := checkNesting(data, max); e != nil {
		return e
	}
	return nil
}
