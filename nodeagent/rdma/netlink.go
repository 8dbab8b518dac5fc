package rdma

import (
	"errors"
	"fmt"
	"sort"
	"syscall"

	"github.com/vishvananda/netlink"
)

// NetlinkLister lists devices through the kernel's RDMA netlink family
// (what `rdma link` uses). A kernel without it (no ib_core loaded, or built
// without RDMA) answers EPROTONOSUPPORT; Fallback then names the devices
// instead, which on such a host finds none.
type NetlinkLister struct {
	Fallback Lister
}

var _ Lister = NetlinkLister{}

// Devices lists the RDMA devices the kernel knows, sorted.
func (l NetlinkLister) Devices() ([]string, error) {
	links, err := netlink.RdmaLinkList()
	if errors.Is(err, syscall.EPROTONOSUPPORT) && l.Fallback != nil {
		return l.Fallback.Devices()
	}
	if err != nil {
		return nil, fmt.Errorf("RDMA netlink: %w", err)
	}
	names := make([]string, 0, len(links))
	for _, link := range links {
		names = append(names, link.Attrs.Name)
	}
	sort.Strings(names)
	return names, nil
}

// HostLister is how a real host lists its devices: netlink, else /sys.
func HostLister(root string) Lister {
	return NetlinkLister{Fallback: SysfsLister{Root: root}}
}

// subscribeLinks delivers a netlink link update for every change of a
// network interface (up, down, carrier) until done closes. A RoCE port's
// netdev losing its carrier shows there before the port's state file is
// polled again.
func subscribeLinks(done <-chan struct{}) (<-chan string, error) {
	updates := make(chan netlink.LinkUpdate, 64)
	if err := netlink.LinkSubscribe(updates, done); err != nil {
		return nil, fmt.Errorf("netlink link updates: %w", err)
	}
	names := make(chan string, 64)
	go func() {
		defer close(names)
		for u := range updates {
			if u.Link == nil {
				continue
			}
			select {
			case names <- u.Link.Attrs().Name:
			default: // a wake-up is pending already; the poll reads every port
			}
		}
	}()
	return names, nil
}
