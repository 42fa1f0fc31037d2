// Package hint is corral's one way for an error to tell the user what to
// do next: an error carries a hint, printed on its own line under the
// error by the CLI ("hint: corral stop web-3f2a1c first") and shown beside
// it by the app. The message stays about what went wrong; the hint is not
// part of Error(), so wrapping an error never buries its hint mid-line.
//
// Any error with a Hint() string method counts (core/lima, core/secret and
// core/launchenv errors compute theirs); New attaches one to any error.
package hint

import "slices"

// Error is an error with a hint for the user.
type Error struct {
	err  error
	hint string
}

// New returns err with hint attached, or nil when err is nil.
func New(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &Error{err: err, hint: hint}
}

func (e *Error) Error() string { return e.err.Error() }
func (e *Error) Unwrap() error { return e.err }
func (e *Error) Hint() string  { return e.hint }

// All returns the hints of err and of the errors it wraps (every branch of
// errors.Join), once each, in order. On each branch the outermost hint
// wins: an error that adds a hint has considered the ones below it.
func All(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if h, ok := e.(interface{ Hint() string }); ok && h.Hint() != "" {
			if !slices.Contains(out, h.Hint()) {
				out = append(out, h.Hint())
			}
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				walk(c)
			}
		}
	}
	walk(err)
	return out
}

// Of returns the first hint of err (All), or "".
func Of(err error) string {
	if all := All(err); len(all) > 0 {
		return all[0]
	}
	return ""
}

// Or returns the first hint of err (Of), or def when it has none.
func Or(err error, def string) string {
	if h := Of(err); h != "" {
		return h
	}
	return def
}

var _ interface{ Hint() string } = (*Error)(nil)
