package egress

// LogRequest appends a request line (kind "request") for a request the box
// filed: what it asked for, its reason and who says they asked, all
// cleaned and capped by [ParseBoxRequest]. It returns the append's error:
// a request that is not recorded is refused (see [RequestConfig.Record]).
func (l *DecisionLog) LogRequest(r BoxRequest) error {
	e := Entry{Time: r.Time, Box: l.box, Kind: KindRequest, Host: r.Entry, Port: r.Port,
		What: r.What, Request: r.Key(), Why: r.Why}
	if r.What == RequestEgress {
		if a, err := ParseAllowEntry(r.Entry); err == nil {
			e.Host, e.Port = a.Host, a.Port
		}
	}
	if !r.Who.IsZero() {
		who := r.Who
		e.Who = &who
	}
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	return l.out.Append(e)
}
