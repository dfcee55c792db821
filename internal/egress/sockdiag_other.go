//go:build !linux

package egress

import (
	"errors"
	"net/netip"
)

// sockDiag is Linux's; elsewhere attribution reads /proc (if any).
type sockDiag struct{}

func openSockDiag(int) (*sockDiag, error) { return nil, errors.New("sock_diag is Linux's") }

func (d *sockDiag) Close() {}

func (d *sockDiag) inode(netip.AddrPort, netip.AddrPort) (uint32, error) {
	return 0, errors.ErrUnsupported
}
