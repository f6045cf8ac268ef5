//! `--log.format logfmt`: one line of `key=value` pairs per event, as Prometheus logs
//! (`ts=… level=info msg="…" key=value`), followed by the fields of the event's spans
//! from the outermost in, so a watcher's line still names its group, role and URL.
//!
//! A formatter for `tracing-subscriber`'s fmt layer. It follows an event's explicit
//! parent span (kubesd's actors log with `parent: &span`), not only the entered one.

use std::fmt::{self, Write};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// Formats events as logfmt lines.
pub struct LogfmtEvents;

/// Formats span fields as logfmt pairs (stored with each span, written with its events).
pub struct LogfmtFields;

impl<'w> FormatFields<'w> for LogfmtFields {
    fn format_fields<R: RecordFields>(&self, mut writer: Writer<'w>, fields: R) -> fmt::Result {
        let mut visitor = PairWriter {
            out: String::new(),
            message: None,
        };
        fields.record(&mut visitor);
        writer.write_str(visitor.out.trim_start())
    }
}

impl<S, N> FormatEvent<S, N> for LogfmtEvents
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let mut visitor = PairWriter {
            out: String::new(),
            message: None,
        };
        event.record(&mut visitor);
        write!(
            writer,
            "ts={} level={} target={}",
            humantime::format_rfc3339_micros(std::time::SystemTime::now()),
            meta.level().as_str().to_ascii_lowercase(),
            meta.target()
        )?;
        if let Some(message) = &visitor.message {
            writer.write_str(" msg=")?;
            write_value(&mut writer, message)?;
        }
        writer.write_str(&visitor.out)?;
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                let extensions = span.extensions();
                if let Some(fields) = extensions.get::<FormattedFields<N>>()
                    && !fields.is_empty()
                {
                    write!(writer, " {}", fields.fields)?;
                }
            }
        }
        writeln!(writer)
    }
}

/// Collects an event's or span's fields as ` key=value` pairs; the event's `message`
/// is kept apart (written first, as `msg`).
struct PairWriter {
    out: String,
    message: Option<String>,
}

impl Visit for PairWriter {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.pair(field, value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = format!("{value:?}");
        self.pair(field, &text);
    }
}

impl PairWriter {
    fn pair(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = Some(value.to_string());
            return;
        }
        let _ = write!(self.out, " {}=", field.name());
        let _ = write_value(&mut self.out, value);
    }
}

/// Writes `value`, quoted and escaped if it is empty or holds a space, `=`, `"` or a
/// control character.
fn write_value(out: &mut impl Write, value: &str) -> fmt::Result {
    let plain = !value.is_empty()
        && !value
            .chars()
            .any(|c| c == ' ' || c == '=' || c == '"' || c.is_control());
    if plain {
        return out.write_str(value);
    }
    out.write_char('"')?;
    for c in value.chars() {
        match c {
            '"' => out.write_str("\\\"")?,
            '\\' => out.write_str("\\\\")?,
            '\n' => out.write_str("\\n")?,
            c if c.is_control() => write!(out, "\\u{{{:x}}}", c as u32)?,
            c => out.write_char(c)?,
        }
    }
    out.write_char('"')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(v: &str) -> String {
        let mut out = String::new();
        let _ = write_value(&mut out, v);
        out
    }

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(value("plain"), "plain");
        assert_eq!(
            value("http://10.0.0.1:6443/api"),
            "http://10.0.0.1:6443/api"
        );
        assert_eq!(value("two words"), "\"two words\"");
        assert_eq!(value(""), "\"\"");
        assert_eq!(value("a=b"), "\"a=b\"");
        assert_eq!(value("say \"hi\"\n"), "\"say \\\"hi\\\"\\n\"");
    }
}
