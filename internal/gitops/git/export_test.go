package git

// SetBeforePush installs a hook that runs just before each push (tests race another writer).
func (c *Cache) SetBeforePush(f func()) { c.beforePush = f }
