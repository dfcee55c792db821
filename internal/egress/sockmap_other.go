//go:build !linux

package egress

import (
	"errors"
	"net"
)

// KernelTunnels: only Linux carries tunnels in the kernel.
func KernelTunnels() error {
	return errors.New("tunnels are copied in user space: no sockmap on this system")
}

type kernelPair struct{ upKernel bool }

func pairKernel(client, up net.Conn) (*kernelPair, int64, int64, error) {
	return nil, 0, 0, KernelTunnels()
}
func (*kernelPair) unpair()              {}
func (*kernelPair) drainUp(bool) int64   { return 0 }
func (*kernelPair) drainDown(bool) int64 { return 0 }
