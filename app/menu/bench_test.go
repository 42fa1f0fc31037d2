package menu

import (
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/boxstate"
)

// BenchmarkBuild20Boxes is the menu rebuild the app does on every refresh
// with a busy machine: 20 boxes, each with 8 denied hosts and 2
// detachable sessions, 10 projects, 15 repositories under project_roots.
// Target: well under 20 ms per rebuild.
func BenchmarkBuild20Boxes(b *testing.B) {
	var st State
	for i := 0; i < 20; i++ {
		bv := BoxView{Name: fmt.Sprintf("project-%02d-3f2a1c", i), Project: fmt.Sprintf("/home/u/src/project-%02d", i),
			State: boxstate.Running, MemBytes: uint64(i+1) << 28, MemCapBytes: 4 << 30, Idle: time.Duration(i) * time.Minute}
		for j := 0; j < 8; j++ {
			bv.Denied = append(bv.Denied, DeniedHost{Host: fmt.Sprintf("h%d.svc%d.example.test", j, i), Port: 443, Count: j + 1, Last: now.Add(-time.Duration(j) * time.Minute)})
		}
		bv.Detached = []SessionView{{Name: "claude", Agent: "claude", Attached: 1, Activity: now}, {Name: "tests", Agent: "shell", Activity: now.Add(-time.Hour)}}
		st.Boxes = append(st.Boxes, bv)
		st.Projects = append(st.Projects, Project{Dir: bv.Project, Box: bv.Name, LastUsed: now.Add(-time.Duration(i) * time.Hour)})
	}
	for i := 0; i < 15; i++ {
		st.Repos = append(st.Repos, Project{Dir: fmt.Sprintf("/home/u/src/repo-%02d", i)})
	}
	st.Roots = []string{"~/src"}
	ui := UI{Now: now}
	b.ReportAllocs()
	for b.Loop() {
		_ = Build(st, ui, Limits{})
	}
}
