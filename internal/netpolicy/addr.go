package netpolicy

import "net/netip"

// special lists the address ranges that are refused unless the operator allows them, most
// specific first, with what to call them in messages. Everything else is a public address.
var special = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("::/128"), "the unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible address"},
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified (this network) address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address (where clouds serve instance metadata)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a 6to4 relay address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 address (it may reach any IPv4 address)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a NAT64 address (it may reach any IPv4 address)"},
	{netip.MustParsePrefix("100::/64"), "a discard address"},
	{netip.MustParsePrefix("2001::/32"), "a Teredo address (it may reach any IPv4 address)"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address (it may reach any IPv4 address)"},
	{netip.MustParsePrefix("fc00::/7"), "a private (unique local) address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

// networkKeywords name the ranges operators allow most often.
var networkKeywords = map[string][]netip.Prefix{
	"loopback":   {netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
	"private":    {netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("fc00::/7")},
	"link-local": {netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("fe80::/10")},
	"all":        {netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")},
}

// classify returns what kind of special address a is (unmapped, without zone), or "" for a
// public one.
func classify(a netip.Addr) string {
	if !a.IsValid() {
		return "not an address"
	}
	for _, s := range special {
		if s.prefix.Contains(a) {
			return s.what
		}
	}
	return ""
}
