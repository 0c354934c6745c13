//! The manifest of Redis 7's multi-part log: which base and incremental
//! files make up the log, in order.

/// What the manifest lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ManifestFile {
    pub(super) name: String,
    pub(super) seq: u64,
    pub(super) kind: char,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Manifest {
    pub(super) files: Vec<ManifestFile>,
}

impl Manifest {
    pub(super) fn parse(text: &str) -> Manifest {
        let mut files = Vec::new();
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let mut name = None;
            let mut seq = 0;
            let mut kind = 'i';
            for pair in words.chunks(2) {
                match pair {
                    ["file", v] => name = Some(v.to_string()),
                    ["seq", v] => seq = v.parse().unwrap_or(0),
                    ["type", v] => kind = v.chars().next().unwrap_or('i'),
                    _ => {}
                }
            }
            if let Some(name) = name {
                files.push(ManifestFile { name, seq, kind });
            }
        }
        Manifest { files }
    }

    pub(super) fn render(&self) -> String {
        self.files
            .iter()
            .map(|f| format!("file {} seq {} type {}\n", f.name, f.seq, f.kind))
            .collect()
    }

    pub(super) fn base(&self) -> Option<&ManifestFile> {
        self.files.iter().find(|f| f.kind == 'b')
    }

    pub(super) fn incrs(&self) -> impl Iterator<Item = &ManifestFile> {
        self.files.iter().filter(|f| f.kind == 'i')
    }

    pub(super) fn next_seq(&self, kind: char) -> u64 {
        self.files
            .iter()
            .filter(|f| f.kind == kind)
            .map(|f| f.seq)
            .max()
            .unwrap_or(0)
            + 1
    }
}
