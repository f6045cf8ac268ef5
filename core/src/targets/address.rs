//! Target addresses: `host:port` as Prometheus writes them.

use arcstr::ArcStr;

/// `host:port`, bracketing IPv6 hosts as Go's `net.JoinHostPort` does.
pub(crate) fn join_host_port(host: &str, port: i64) -> ArcStr {
    // Pushed, not `format!`ted: one address per target, and the formatting machinery
    // costs more than the rest of building it.
    let mut address = String::with_capacity(host.len() + 8);
    if host.contains(':') {
        address.push('[');
        address.push_str(host);
        address.push(']');
    } else {
        address.push_str(host);
    }
    address.push(':');
    address.push_str(itoa::Buffer::new().format(port));
    ArcStr::from(address)
}
