package credential

import (
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/corral-dev/corral/core/secret"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/corral-dev/corral/core/egress"
)

// Route is one credential a broker serves, as it tells a session: never
// the secret, nor where the secret came from.
type Route struct {
	Name     string `json:"name"`
	Upstream string `json:"upstream"`
	// BaseURLVar and Var are set for an agent's key: the session sets
	// BaseURLVar to the route and Var to the placeholder.
	BaseURLVar string `json:"base_url_var,omitempty"`
	Var        string `json:"var,omitempty"`
	// Withholds are the variables the session must not carry.
	Withholds []string `json:"withholds,omitempty"`
}

// Served is the broker's answer to one session: the routes it serves and
// the token that opens them for this session.
type Served struct {
	Token  string
	Routes []Route
	// Keychain are the keychain items the broker reads, for a session's
	// secret.Decide (refs only).
	Keychain []secret.Ref
}

var varNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,63}$`) })

// check validates an answer read from the broker's socket: the broker is
// this user's own process, but the answer is decoded strictly all the same
// (it becomes session variables).
func (s Served) check() error {
	var errs []error
	if len(s.Routes) > 0 {
		if _, err := hex.DecodeString(s.Token); err != nil || len(s.Token) != egress.TokenLen || strings.ToLower(s.Token) != s.Token {
			errs = append(errs, errors.New("the route token is not 64 lowercase hex digits"))
		}
	}
	if len(s.Routes) > 64 {
		errs = append(errs, fmt.Errorf("%d routes", len(s.Routes)))
	}
	if len(s.Keychain) > 64 {
		errs = append(errs, fmt.Errorf("%d keychain items", len(s.Keychain)))
	}
	for _, k := range s.Keychain {
		if k.Service == "" || len(k.Service) > 256 || len(k.Account) > 256 || strings.ContainsAny(k.Service+k.Account, "\x00\r\n") {
			errs = append(errs, fmt.Errorf("keychain item %q: not a service and account", truncateText(k.Service, 64)))
		}
	}
	for _, r := range s.Routes {
		if !egress.ValidCredentialName(r.Name) {
			errs = append(errs, fmt.Errorf("route %q: not a credential name", r.Name))
		}
		if _, err := egress.ParseUpstream(r.Upstream); err != nil {
			errs = append(errs, fmt.Errorf("route %s: %w", r.Name, err))
		}
		for _, v := range append([]string{r.BaseURLVar, r.Var}, r.Withholds...) {
			if v != "" && !varNameRe().MatchString(v) {
				errs = append(errs, fmt.Errorf("route %s: %q is not a variable name", r.Name, v))
			}
		}
		if (r.BaseURLVar == "") != (r.Var == "") {
			errs = append(errs, fmt.Errorf("route %s: a base URL variable needs a placeholder variable", r.Name))
		}
	}
	return errors.Join(errs...)
}

// Withheld lists the session variables the broker holds, sorted.
func (s Served) Withheld() []string {
	var out []string
	for _, r := range s.Routes {
		out = addUnique(out, r.Withholds...)
	}
	sort.Strings(out)
	return out
}

// SessionVars are the variables a session gets for the routes, broker
// being "http://HOST:PORT" as the guest reaches it: for an agent's key its
// base URL variable and a placeholder (in every session of the box, not
// only the agent's: `claude` started from `corral shell` works the same
// way); for every other credential git's url.<base>.insteadOf for the
// upstream (as GIT_CONFIG_* variables), so that git's https URLs go to the
// broker. The base URLs hold the session's token: a route answers nobody
// else.
func (s Served) SessionVars(broker string) []Var {
	var out []Var
	git := 0
	for _, r := range s.Routes {
		base := BaseURL(broker, s.Token, r.Name)
		if r.BaseURLVar != "" {
			out = append(out, Var{r.BaseURLVar, base}, Var{r.Var, Placeholder})
			continue
		}
		up := strings.TrimRight(r.Upstream, "/") + "/"
		out = append(out,
			Var{fmt.Sprintf("GIT_CONFIG_KEY_%d", git), "url." + base + "/.insteadOf"},
			Var{fmt.Sprintf("GIT_CONFIG_VALUE_%d", git), up})
		git++
	}
	if git > 0 {
		out = append(out, Var{"GIT_CONFIG_COUNT", fmt.Sprint(git)})
	}
	return out
}

// Names lists the routes' credential names.
func (s Served) Names() []string {
	out := make([]string, len(s.Routes))
	for i, r := range s.Routes {
		out[i] = r.Name
	}
	return slices.Clip(out)
}
