//! `core/v1.Pod` in protobuf: `metadata` 1, `spec` 2 (`containers` 2 with `resources`
//! 8, `nodeName` 10, `initContainers` 20), `status` 3 (`phase` 1, `conditions` 2,
//! `hostIP` 5, `podIP` 6, `containerStatuses` 8, `initContainerStatuses` 10), decoded
//! as the JSON path decodes them into [`Pod`].

use super::fields::{Repeated, for_each_field};
use super::meta::object_meta;
use super::reader::WireError;
use crate::model::{
    Container, ContainerPort, ContainerState, ContainerStatus, Pod, PodSpec, PodStatus, Terminated,
};

/// Decodes a `Pod`.
pub(crate) fn pod(bytes: &[u8]) -> Result<Pod, WireError> {
    let mut pod = Pod::default();
    for_each_field(bytes, "Pod", |f| {
        match f.number {
            1 => pod.metadata = object_meta(f.bytes("metadata")?)?,
            2 => pod.spec = pod_spec(f.bytes("spec")?)?,
            3 => pod.status = pod_status(f.bytes("status")?)?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(pod)
}

fn pod_spec(bytes: &[u8]) -> Result<PodSpec, WireError> {
    const M: &str = "PodSpec";
    let mut spec = PodSpec::default();
    let (mut containers, mut init_containers) = (Repeated::default(), Repeated::default());
    for_each_field(bytes, M, |f| {
        match f.number {
            2 => containers.note(f),
            10 => spec.node_name = f.repeated("nodeName")?,
            20 => init_containers.note(f),
            _ => {}
        }
        Ok(())
    })?;
    spec.containers = containers.decode(bytes, M, |f| container(f.bytes("containers")?))?;
    spec.init_containers =
        init_containers.decode(bytes, M, |f| container(f.bytes("initContainers")?))?;
    Ok(spec)
}

fn container(bytes: &[u8]) -> Result<Container, WireError> {
    const M: &str = "Container";
    let mut container = Container::default();
    let mut ports = Repeated::default();
    for_each_field(bytes, M, |f| {
        match f.number {
            1 => container.name = f.repeated("name")?,
            2 => container.image = f.repeated("image")?,
            6 => ports.note(f),
            8 => container.cpu_request = cpu_request(f.bytes("resources")?)?,
            24 => container.restart_policy = f.enum_value("restartPolicy")?,
            _ => {}
        }
        Ok(())
    })?;
    container.ports = ports.decode(bytes, M, |f| container_port(f.bytes("ports")?))?;
    Ok(container)
}

/// `ResourceRequirements` (`limits` 1, `requests` 2: `map<string, Quantity>`, a
/// `Quantity` being `{string = 1}`): the CPU request in millicores, as JSON reads it.
fn cpu_request(bytes: &[u8]) -> Result<Option<u32>, WireError> {
    let mut cpu = None;
    for_each_field(bytes, "ResourceRequirements", |f| {
        if f.number == 2 {
            let (mut key, mut quantity) = ("", None);
            for_each_field(f.bytes("requests")?, "ResourceList", |entry| {
                match entry.number {
                    1 => key = entry.str("key")?,
                    2 => quantity = Some(entry.bytes("value")?),
                    _ => {}
                }
                Ok(())
            })?;
            if key == "cpu"
                && let Some(quantity) = quantity
            {
                cpu = quantity_string(quantity)?.and_then(crate::model::cpu_millis);
            }
        }
        Ok(())
    })?;
    Ok(cpu)
}

/// A `Quantity`'s string.
fn quantity_string(bytes: &[u8]) -> Result<Option<&str>, WireError> {
    let mut text = None;
    for_each_field(bytes, "Quantity", |f| {
        if f.number == 1 {
            text = Some(f.str("string")?);
        }
        Ok(())
    })?;
    Ok(text)
}

fn container_port(bytes: &[u8]) -> Result<ContainerPort, WireError> {
    let mut port = ContainerPort::default();
    for_each_field(bytes, "ContainerPort", |f| {
        match f.number {
            1 => port.name = f.repeated("name")?,
            3 => port.container_port = f.int32("containerPort")?,
            4 => port.protocol = f.enum_value("protocol")?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(port)
}

fn pod_status(bytes: &[u8]) -> Result<PodStatus, WireError> {
    const M: &str = "PodStatus";
    let mut status = PodStatus::default();
    let (mut containers, mut init_containers) = (Repeated::default(), Repeated::default());
    for_each_field(bytes, M, |f| {
        match f.number {
            1 => status.phase = f.enum_value("phase")?,
            // As in JSON, every condition is read and the first `Ready` one kept.
            2 => {
                let (is_ready, value) = pod_condition(f.bytes("conditions")?)?;
                if is_ready && status.ready.is_none() {
                    status.ready = Some(value);
                }
            }
            5 => status.host_ip = f.repeated("hostIP")?,
            6 => status.pod_ip = f.unique("podIP")?,
            8 => containers.note(f),
            10 => init_containers.note(f),
            _ => {}
        }
        Ok(())
    })?;
    status.container_statuses = containers.decode(bytes, M, |f| {
        container_status(f.bytes("containerStatuses")?)
    })?;
    status.init_container_statuses = init_containers.decode(bytes, M, |f| {
        container_status(f.bytes("initContainerStatuses")?)
    })?;
    Ok(status)
}

/// Whether a condition is `Ready`, and its status (an enum value: no allocation).
fn pod_condition(bytes: &[u8]) -> Result<(bool, arcstr::ArcStr), WireError> {
    let (mut is_ready, mut value) = (false, arcstr::ArcStr::new());
    for_each_field(bytes, "PodCondition", |f| {
        match f.number {
            1 => is_ready = f.str("type")? == "Ready",
            2 => value = f.enum_value("status")?,
            _ => {}
        }
        Ok(())
    })?;
    Ok((is_ready, value))
}

fn container_status(bytes: &[u8]) -> Result<ContainerStatus, WireError> {
    let mut status = ContainerStatus::default();
    for_each_field(bytes, "ContainerStatus", |f| {
        match f.number {
            1 => status.name = f.repeated("name")?,
            2 => status.state = container_state(f.bytes("state")?)?,
            8 => status.container_id = f.unique("containerID")?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(status)
}

fn container_state(bytes: &[u8]) -> Result<ContainerState, WireError> {
    let mut state = ContainerState::default();
    for_each_field(bytes, "ContainerState", |f| {
        if f.number == 3 {
            f.bytes("terminated")?;
            state.terminated = Some(Terminated {});
        }
        Ok(())
    })?;
    Ok(state)
}
