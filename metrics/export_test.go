package metrics

// ScopesHeld, JobsIndexed and MetersHeld show the registry's bookkeeping to the leak test.
func ScopesHeld(r *Registry) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.scopes)
}

func JobsIndexed(r *Registry) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.byJob)
}

func MetersHeld(r *Registry) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n := 0
	for sm := range r.viewScopes {
		n += sm.nviews
	}
	return n
}
