package box

import (
	"strings"
	"testing"
)

// doctor compares the user sessions run as with the guest user the
// template names: the same passes, another fails naming both (a Lima
// whose rule changed, a template from before it was applied); no answer
// (an old guest) adds no check.
func TestGuestUserCheck(t *testing.T) {
	find := func(cs []Check) *Check {
		for i := range cs {
			if cs[i].Check == "guest user" {
				return &cs[i]
			}
		}
		return nil
	}
	w := guestWant{Box: "web-3f2a1c", Network: "full", User: "lima"}
	if c := find(guestChecks(w, map[string]string{"user": "lima", "marker": "1", "network": "full"})); c == nil || !c.OK {
		t.Errorf("same user: %+v", c)
	}
	c := find(guestChecks(w, map[string]string{"user": "john.doe", "marker": "1", "network": "full"}))
	if c == nil || c.OK || !strings.Contains(c.Detail, `"john.doe"`) || !strings.Contains(c.Detail, `"lima"`) {
		t.Errorf("another user: %+v", c)
	}
	if c := find(guestChecks(w, map[string]string{"marker": "1", "network": "full"})); c != nil {
		t.Errorf("no answer: %+v", c)
	}
}
