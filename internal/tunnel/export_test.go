package tunnel

// SpillAt is spillAt, for the tests of package tunnel_test.
const SpillAt = spillAt
