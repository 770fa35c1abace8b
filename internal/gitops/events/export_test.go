package events

// Listeners is how many listeners' goroutines (resource, nats, minio events) run.
func (c *Controller) Listeners() int64 { return c.listeners.Load() }
