package nodeagent

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// HostAddr returns the first non-loopback IPv4 address of the host, else
// fallback: the address a node advertises when told none.
func HostAddr(fallback string) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return fallback
	}
	for _, a := range addrs {
		ipnet, ok := a.(*net.IPNet)
		if ok && !ipnet.IP.IsLoopback() && ipnet.IP.To4() != nil {
			return ipnet.IP.String()
		}
	}
	return fallback
}

// MemTotalMB reads MemTotal, in MB, from a meminfo file (/proc/meminfo).
func MemTotalMB(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: MemTotal %q: %w", path, fields[1], err)
			}
			return kb / 1024, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no MemTotal line", path)
}
