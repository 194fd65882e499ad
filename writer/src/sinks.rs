//! The sinks of a run's formats, opened together: [`with_sink`] picks the one type that
//! writes them (a format's own sink, several behind [`AnySink`], `record=tree`'s [`TreeSink`]
//! in front), so that the writer loop is compiled for it.

use crate::file;
use crate::format::{paths, Format};
use crate::gzip::{self, Out};
use crate::jinsight::sink::big_endian;
use crate::jinsight::JinsightSink;
use crate::model::{Ending, Enter, Event, Leave, Sink, TraceInfo};
use crate::orca::OrcaSink;
use crate::record_tree::TreeSink;
use crate::tptp::{self, TptpSink};
use std::io;

/// The sink of one format, chosen at run time and dispatched without a virtual call.
pub enum FormatSink {
    Jinsight(JinsightSink<Out>),
    JinsightBig(JinsightSink<Out, true>),
    Tptp(TptpSink<tptp::binary::Encoder<Out>>),
    TptpXml(TptpSink<tptp::xml::Encoder<Out>>),
    Orca(OrcaSink),
}

/// What a sink needs beyond the run: JinsightLive's header platform (None: this machine's),
/// which sets the byte order of events; the files' permissions (None: 0666 less the umask).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FormatOptions {
    pub platform: Option<u32>,
    pub mode: Option<u32>,
    /// `compress=gzip`: each file written through gzip ([`gzip`]).
    pub gzip: bool,
    /// `record=tree`: calling-context trees instead of method events
    /// ([`crate::record_tree`]).
    pub tree: bool,
}

impl FormatOptions {
    /// Creates the file at `path` (see [`file::create`]), compressed if asked; or, inside
    /// [`gzip::streaming`], the live stream, with its copy at `path` unless it is empty.
    fn create(&self, path: &str) -> io::Result<Out> {
        if let Some(socket) = gzip::take_stream() {
            let copy = match path {
                "" => Ok(None),
                path => file::create(path, self.mode).map(Some),
            };
            // A stream that cannot start is shut, so that the agent sees its client gone.
            let live = copy.and_then(|copy| gzip::LiveOut::new(socket.try_clone()?, copy));
            if live.is_err() {
                let _ = socket.shutdown(std::net::Shutdown::Both);
            }
            return Ok(Out::Live(Box::new(live?)));
        }
        Ok(Out::new(file::create(path, self.mode)?, self.gzip))
    }
}

impl FormatSink {
    /// Creates the file `path` and starts it in `format` for the run `info` describes.
    pub fn create(
        format: Format,
        path: &str,
        info: &TraceInfo,
        options: FormatOptions,
    ) -> io::Result<FormatSink> {
        let formats = [format];
        Ok(match format {
            Format::Jinsight if big_endian(options.platform) => {
                FormatSink::JinsightBig(OpenSink::open(&formats, path, info, options)?)
            }
            Format::Jinsight => {
                FormatSink::Jinsight(OpenSink::open(&formats, path, info, options)?)
            }
            Format::Tptp => FormatSink::Tptp(OpenSink::open(&formats, path, info, options)?),
            Format::TptpXml => FormatSink::TptpXml(OpenSink::open(&formats, path, info, options)?),
            Format::Orca => FormatSink::Orca(OpenSink::open(&formats, path, info, options)?),
        })
    }
}

macro_rules! each {
    ($self:expr, $s:ident => $e:expr) => {
        match $self {
            FormatSink::Jinsight($s) => $e,
            FormatSink::JinsightBig($s) => $e,
            FormatSink::Tptp($s) => $e,
            FormatSink::TptpXml($s) => $e,
            FormatSink::Orca($s) => $e,
        }
    };
}

impl Sink for FormatSink {
    fn event(&mut self, event: &Event) -> io::Result<()> {
        each!(self, s => s.event(event))
    }
    #[inline(always)]
    fn enter(&mut self, e: Enter) -> io::Result<()> {
        each!(self, s => s.enter(e))
    }
    #[inline(always)]
    fn leave(&mut self, l: Leave) -> io::Result<()> {
        each!(self, s => s.leave(l))
    }
    fn flush(&mut self) -> io::Result<()> {
        each!(self, s => s.flush())
    }
    fn finish(&mut self, ending: &Ending) -> io::Result<()> {
        each!(self, s => s.finish(ending))
    }
    fn events(&self) -> u64 {
        each!(self, s => s.events())
    }
    fn bytes(&self) -> u64 {
        each!(self, s => s.bytes())
    }
    fn max_classes(&self) -> u32 {
        each!(self, s => s.max_classes())
    }
}

/// The sinks of a run: one per format asked for (`format=binary;tptp`), each event to each.
pub struct AnySink {
    first: FormatSink,
    rest: Vec<FormatSink>,
}

impl AnySink {
    /// Creates the file of each format (as [`paths`] names them) and starts it for the run
    /// `info` describes.
    pub fn create(
        formats: &[Format],
        path: &str,
        info: &TraceInfo,
        options: FormatOptions,
    ) -> io::Result<AnySink> {
        let mut sinks = Vec::new();
        for (format, path) in paths(formats, path) {
            sinks.push(FormatSink::create(format, &path, info, options)?);
        }
        if sinks.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no format"));
        }
        let first = sinks.remove(0);
        Ok(AnySink { first, rest: sinks })
    }

    /// A call's event: the first sink's fast path (`first`), then the others' (`event`), if any.
    #[inline(always)]
    fn call(
        &mut self,
        first: impl FnOnce(&mut FormatSink) -> io::Result<()>,
        event: impl FnOnce() -> Event,
    ) -> io::Result<()> {
        first(&mut self.first)?;
        if self.rest.is_empty() {
            return Ok(());
        }
        self.rest_event(&event())
    }

    /// An event for the formats after the first (out of line: most runs have one format).
    #[inline(never)]
    fn rest_event(&mut self, event: &Event) -> io::Result<()> {
        self.rest.iter_mut().try_for_each(|s| s.event(event))
    }

    fn all(&mut self) -> impl Iterator<Item = &mut FormatSink> {
        std::iter::once(&mut self.first).chain(self.rest.iter_mut())
    }
}

impl Sink for AnySink {
    fn event(&mut self, event: &Event) -> io::Result<()> {
        self.all().try_for_each(|s| s.event(event))
    }
    #[inline(always)]
    fn enter(&mut self, e: Enter) -> io::Result<()> {
        self.call(|s| s.enter(e), || Event::MethodEnter(e))
    }
    #[inline(always)]
    fn leave(&mut self, l: Leave) -> io::Result<()> {
        self.call(|s| s.leave(l), || Event::MethodLeave(l))
    }
    fn flush(&mut self) -> io::Result<()> {
        self.all().try_for_each(|s| s.flush())
    }
    fn finish(&mut self, ending: &Ending) -> io::Result<()> {
        self.all().try_for_each(|s| s.finish(ending))
    }
    /// The events of the first format's file.
    fn events(&self) -> u64 {
        self.first.events()
    }
    /// The bytes of all files.
    fn bytes(&self) -> u64 {
        self.first.bytes() + self.rest.iter().map(|s| s.bytes()).sum::<u64>()
    }
    fn max_classes(&self) -> u32 {
        let rest = self.rest.iter().map(|s| s.max_classes());
        rest.fold(self.first.max_classes(), u32::min)
    }
}

/// A sink that a run can open by itself: one format's own sink, or [`AnySink`].
pub trait OpenSink: Sink + Send + Sized + 'static {
    /// Creates the files of `formats` for `path` (as [`paths`] names them) and starts them for
    /// the run `info` describes.
    fn open(
        formats: &[Format],
        path: &str,
        info: &TraceInfo,
        options: FormatOptions,
    ) -> io::Result<Self>;
}

impl<const BIG: bool> OpenSink for JinsightSink<Out, BIG> {
    fn open(_: &[Format], path: &str, info: &TraceInfo, o: FormatOptions) -> io::Result<Self> {
        JinsightSink::new(o.create(path)?, info, o.platform)
    }
}

impl OpenSink for TptpSink<tptp::binary::Encoder<Out>> {
    fn open(_: &[Format], path: &str, info: &TraceInfo, o: FormatOptions) -> io::Result<Self> {
        TptpSink::new(tptp::binary::Encoder::new(o.create(path)?, info)?, info)
    }
}

impl OpenSink for TptpSink<tptp::xml::Encoder<Out>> {
    fn open(_: &[Format], path: &str, info: &TraceInfo, o: FormatOptions) -> io::Result<Self> {
        TptpSink::new(tptp::xml::Encoder::new(o.create(path)?, info)?, info)
    }
}

impl OpenSink for OrcaSink {
    fn open(_: &[Format], path: &str, info: &TraceInfo, o: FormatOptions) -> io::Result<Self> {
        OrcaSink::new(o.create(path)?, path, info, o.mode)
    }
}

impl OpenSink for AnySink {
    fn open(all: &[Format], path: &str, info: &TraceInfo, o: FormatOptions) -> io::Result<Self> {
        AnySink::create(all, path, info, o)
    }
}

impl<S: OpenSink> OpenSink for TreeSink<S> {
    fn open(all: &[Format], path: &str, info: &TraceInfo, o: FormatOptions) -> io::Result<Self> {
        Ok(TreeSink::new(S::open(all, path, info, o)?))
    }
}

/// Code to run with the sink type of a run's formats ([`with_sink`]).
pub trait WithSink {
    type Output;
    fn call<S: OpenSink>(self) -> Self::Output;
}

/// Runs `f` with the sink type of `formats`: one format's own type, so that the writer's loop
/// is compiled for that format alone (a choice made per event cost the writer 10-15% of its
/// events/s), or [`AnySink`] for several.
pub fn with_sink<F: WithSink>(formats: &[Format], options: FormatOptions, f: F) -> F::Output {
    if options.tree {
        return match formats {
            [Format::Tptp] => f.call::<TreeSink<TptpSink<tptp::binary::Encoder<Out>>>>(),
            [Format::TptpXml] => f.call::<TreeSink<TptpSink<tptp::xml::Encoder<Out>>>>(),
            _ => f.call::<TreeSink<AnySink>>(),
        };
    }
    match formats {
        [Format::Jinsight] if big_endian(options.platform) => f.call::<JinsightSink<Out, true>>(),
        [Format::Jinsight] => f.call::<JinsightSink<Out>>(),
        [Format::Tptp] => f.call::<TptpSink<tptp::binary::Encoder<Out>>>(),
        [Format::TptpXml] => f.call::<TptpSink<tptp::xml::Encoder<Out>>>(),
        [Format::Orca] => f.call::<OrcaSink>(),
        _ => f.call::<AnySink>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_formats_get_their_own_extensions() {
        assert_eq!(
            paths(&[Format::Tptp], "/tmp/a.b/app"),
            [(Format::Tptp, "/tmp/a.b/app".to_string())]
        );
        let all = paths(&Format::ALL, "/tmp/a.b/app.trc");
        let names: Vec<&str> = all.iter().map(|(_, p)| p.as_str()).collect();
        assert_eq!(
            names,
            [
                "/tmp/a.b/app.trc",
                "/tmp/a.b/app.trcbin",
                "/tmp/a.b/app.trcxml"
            ]
        );
        let names = |path| -> Vec<String> {
            paths(&Format::ALL[1..], path)
                .into_iter()
                .map(|(_, p)| p)
                .collect()
        };
        assert_eq!(
            names("/tmp/a.b/app"),
            ["/tmp/a.b/app.trcbin", "/tmp/a.b/app.trcxml"]
        );
        // A rolled file's number is not an extension.
        assert_eq!(names("jlive-7.2"), ["jlive-7.2.trcbin", "jlive-7.2.trcxml"]);
        assert_eq!(Format::of_path("x.trcxml"), Some(Format::TptpXml));
        assert_eq!(Format::parse("jinsight"), Some(Format::Jinsight));
    }
}
