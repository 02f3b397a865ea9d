package kube

// Refused is how many refused jobs the controller remembers.
func (c *Controller) Refused() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.refused)
}
