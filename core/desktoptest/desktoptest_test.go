package desktoptest

import "testing"

func TestStartBusAndKeyring(t *testing.T) {
	addr := StartBus(t)
	env := StartKeyring(t, addr)
	if len(env) == 0 {
		t.Fatal("no environment returned")
	}
	var names []string
	if err := Conn(t, addr).BusObject().Call("org.freedesktop.DBus.ListNames", 0).Store(&names); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range names {
		found = found || n == "org.freedesktop.secrets"
	}
	if !found {
		t.Errorf("org.freedesktop.secrets not on the bus: %v", names)
	}
}
