package ui

import (
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// bar is a used-vs-limit bar in SVG user units (0-100): Run is held by
// jobs placed, Pend by pending jobs (which hold quota from submission).
type bar struct {
	Run, Pend, Over string // x widths; Over is set when use exceeds the limit
	Full            bool   // use has reached the limit
}

func newBar(run, pend, limit int64) bar {
	whole := max(limit, run+pend)
	if whole <= 0 {
		return bar{Run: "0", Pend: "0"}
	}
	w := func(v int64) string { return strconvF(float64(v) * 100 / float64(whole)) }
	b := bar{Run: w(run), Pend: w(pend), Full: run+pend >= limit}
	if run+pend > limit {
		b.Over = w(limit)
	}
	return b
}

type quotaRow struct {
	Key, Used, Running, Pending, Limit, Percent string
	Bar                                         bar
}

type quotaScope struct {
	Scope       string
	PendingJobs int
	Rows        []quotaRow
	FairShare   string // its standing, in words
}

type quotasView struct {
	Scopes []quotaScope
	Admin  bool
}

// quotas: GET /ui/quotas: every scope the user may read (as GET
// /v1/quotas), each resource's use against its limit, split into what
// placed jobs hold and what pending jobs hold.
func (s *server) quotas(w http.ResponseWriter, r *http.Request, u *session) {
	v := quotasView{Admin: u.user.Admin}
	s.store.Read(func(st *state.State) {
		view := api.ViewerOf(st, u.user)
		scopes := map[structs.Scope]bool{}
		for k := range st.Quotas {
			scopes[k] = view.Scope(k)
		}
		for k := range st.Usage {
			scopes[k] = view.Scope(k)
		}
		for k := range st.FairUsage.Scopes {
			scopes[k] = view.Scope(k)
		}
		var seen []structs.Scope
		for _, sc := range slices.Sorted(maps.Keys(scopes)) {
			if scopes[sc] {
				seen = append(seen, sc)
			}
		}
		standings := st.Standings(s.clock(), seen...)
		pending := map[structs.Scope]structs.ResourceList{}
		jobs := map[structs.Scope]int{}
		for _, j := range st.Jobs {
			if j.State == structs.JobPending && len(j.Charged) > 0 && scopes[j.ChargedScope] {
				l := pending[j.ChargedScope]
				if l == nil {
					l = structs.ResourceList{}
					pending[j.ChargedScope] = l
				}
				for k, x := range j.Charged {
					l[k] += x
				}
				jobs[j.ChargedScope]++
			}
		}
		for _, sc := range slices.Sorted(maps.Keys(scopes)) {
			if !scopes[sc] {
				continue
			}
			f := standings[sc]
			qs := quotaScope{Scope: string(sc), PendingJobs: jobs[sc], FairShare: fmt.Sprintf(
				"weight %g, %.0f%% of the weights of the scopes waiting or running; usage %.1f GPU-hours (decayed), %.0f%% of theirs: at %.0f%% of its share",
				f.Weight, f.Share*100, f.Usage/3600, f.UsageShare*100, f.Position*100)}
			limits, used := st.Quotas[sc], st.Usage[sc]
			keys := map[structs.ResourceKey]bool{}
			for k := range limits {
				keys[k] = true
			}
			for k := range used {
				keys[k] = true
			}
			for _, k := range slices.Sorted(maps.Keys(keys)) {
				pend := min(pending[sc][k], used[k])
				row := quotaRow{Key: string(k), Used: amount(k, used[k]), Running: amount(k, used[k]-pend), Pending: amount(k, pend),
					Limit: amount(k, limits[k]), Bar: newBar(used[k]-pend, pend, limits[k])}
				if limits[k] > 0 {
					row.Percent = fmt.Sprintf("%.0f%%", float64(used[k])*100/float64(limits[k]))
				}
				qs.Rows = append(qs.Rows, row)
			}
			v.Scopes = append(v.Scopes, qs)
		}
	})
	s.render(w, r, u, http.StatusOK, "quotas", "Quotas", v)
}
