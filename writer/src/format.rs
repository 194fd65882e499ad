//! The formats jlive writes, by name: their names in `format=` and the files of each. What
//! writes each is in `sinks`; how a file of each is recognised and read, in `read`.

use crate::gzip;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// IBM JinsightLive binary (`format=binary`, alias `jinsight`), `.trc`.
    Jinsight,
    /// Eclipse TPTP binary (TBF), `.trcbin`.
    Tptp,
    /// Eclipse TPTP XML, `.trcxml`.
    TptpXml,
    /// ORCA's event log FILE and meta log FILE.meta (concurrency events only), `.orca`
    /// beside other formats.
    Orca,
}

/// The values `format=` accepts, for messages.
pub const FORMAT_NAMES: &str = "binary (or jinsight), tptp, tptp-xml, orca";

impl Format {
    /// The formats that write method traces (ORCA writes concurrency events only).
    pub const ALL: [Format; 3] = [Format::Jinsight, Format::Tptp, Format::TptpXml];

    /// The format of a `format=` value.
    pub fn parse(name: &str) -> Option<Format> {
        match name {
            "binary" | "jinsight" => Some(Format::Jinsight),
            "tptp" => Some(Format::Tptp),
            "tptp-xml" => Some(Format::TptpXml),
            "orca" => Some(Format::Orca),
            _ => None,
        }
    }

    /// Its name in `format=`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Jinsight => "binary",
            Format::Tptp => "tptp",
            Format::TptpXml => "tptp-xml",
            Format::Orca => "orca",
        }
    }

    /// The extension of its files.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Jinsight => "trc",
            Format::Tptp => "trcbin",
            Format::TptpXml => "trcxml",
            Format::Orca => "orca",
        }
    }

    /// The format whose files end in `path`'s extension.
    /// (A compressed file's `.gz` aside.)
    pub fn of_path(path: &str) -> Option<Format> {
        let path = path.strip_suffix(crate::gzip::SUFFIX).unwrap_or(path);
        let name = path.rsplit('/').next().unwrap_or(path);
        let ext = name.rsplit_once('.')?.1;
        Format::ALL
            .into_iter()
            .chain([Format::Orca])
            .find(|f| f.extension() == ext)
    }

    /// Whether it writes methods' line numbers (which the agent then asks the JVM for).
    pub fn has_line_numbers(self) -> bool {
        self != Format::Jinsight
    }

    /// Whether its files are text, whose positions are lines.
    pub fn is_text(self) -> bool {
        matches!(self, Format::TptpXml | Format::Orca)
    }
}

/// The file of each format for the path the user gave: the path itself for one format;
/// for several, the path with each format's extension (in place of one of theirs it ends in).
/// A compressed file's `.gz` stays at the end of each.
pub fn paths(formats: &[Format], path: &str) -> Vec<(Format, String)> {
    if formats.len() == 1 {
        return vec![(formats[0], path.to_string())];
    }
    let (path, gz) = match path.strip_suffix(gzip::SUFFIX) {
        Some(plain) => (plain, gzip::SUFFIX),
        None => (path, ""),
    };
    let stem = match Format::of_path(path) {
        Some(f) => &path[..path.len() - f.extension().len() - 1],
        None => path,
    };
    formats
        .iter()
        .map(|&f| (f, format!("{}.{}{}", stem, f.extension(), gz)))
        .collect()
}
