//! Which classes are traced: `include=` and `exclude=` lists of class-name globs.
//!
//! Names are matched in dotted form (`com.acme.Shop$Cart`); `*` matches any run of
//! characters, dots included, so `com.acme.*` covers sub-packages too. A class is traced when
//! it matches some include glob (or the include list is empty) and no exclude glob.

/// A compiled include/exclude pair.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassFilter {
    include: Vec<String>,
    exclude: Vec<String>,
}

impl ClassFilter {
    pub fn new(include: &[String], exclude: &[String]) -> ClassFilter {
        ClassFilter {
            include: include.iter().map(|g| g.replace('/', ".")).collect(),
            exclude: exclude.iter().map(|g| g.replace('/', ".")).collect(),
        }
    }

    /// True when every class is traced.
    pub fn is_everything(&self) -> bool {
        self.include.is_empty() && self.exclude.is_empty()
    }

    /// Whether a class, named in internal (`a/b/C`) or dotted form, is traced.
    pub fn traces(&self, class_name: &str) -> bool {
        if self.is_everything() {
            return true;
        }
        let dotted = class_name.replace('/', ".");
        let included = self.include.is_empty() || self.include.iter().any(|g| glob(g, &dotted));
        included && !self.exclude.iter().any(|g| glob(g, &dotted))
    }
}

/// `*`-only glob match over bytes.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("com.acme.*", "com.acme.Shop"));
        assert!(glob("com.acme.*", "com.acme.sub.Shop$1"));
        assert!(!glob("com.acme.*", "com.acmex"));
        assert!(glob("*Test", "a.b.MyTest"));
        assert!(glob("a*b*c", "axxbyyc"));
        assert!(!glob("a*b*c", "axxbyy"));
        assert!(glob("*", ""));
    }

    #[test]
    fn include_and_exclude() {
        let f = ClassFilter::new(&["com.acme.*".into()], &["com.acme.internal.*".into()]);
        assert!(f.traces("com/acme/Shop"));
        assert!(!f.traces("com/acme/internal/Cache"));
        assert!(!f.traces("java/lang/String"));
        assert!(ClassFilter::default().traces("anything"));
    }
}
