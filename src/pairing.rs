//! Image/mask pairing (`pair_with:` on a mask column): every mask has one
//! image of its width and height, and every image has a mask, as the
//! image-driven segmentation loaders need (mmsegmentation lists images and
//! derives each mask's name; milesial/Pytorch-UNet asserts exactly one
//! image and one mask per name; a size mismatch fails their transforms or
//! the loss).
//!
//! Resolution, decided once per run before the scan: a mask's *root* is the
//! directory PATH it was found under (the longest one; a mask named
//! directly or matched by a glob has its own folder as root); the image
//! folder is `root/dir`. A mask's *key* is its path relative to the root
//! without its extension and without `mask_suffix`; an image's is the same
//! relative to the image folder, without `image_suffix`. Images are the
//! files of the image folder (recursively, hidden names skipped) whose
//! extension, in any case, is an image format Pillow opens (PNG, JPEG,
//! BMP, TIFF, WebP, GIF). Keys compare byte for byte (as `glob` does on
//! Linux).
//!
//! Verdicts: a mask whose size differs from its image's, or whose key
//! matches several images (Pytorch-UNet's assertion), is a `pair_with`
//! violation of the mask; an image whose key no mask of a directory PATH
//! has is a `pair_with` violation of the image (it joins the run's files,
//! so the report names it); a mask without an image draws a warning (the
//! loaders never read it). Image sizes come from the image headers
//! ([`crate::source::formats::image::header`]) read in parallel; an image
//! whose header cannot be read is that image's error.
//!
//! The scan asks this module what each file is ([`Pairing::pair`],
//! [`Pairing::orphan`]); the cache keys a file's result on
//! [`Pairing::identity`], which holds the paired image's size, so a result
//! is reused only while the pairing's verdict inputs are the same.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use rayon::prelude::*;

use crate::check::Validator;
use crate::check::tally::{Spot, Tally, Value};
use crate::report::ErrorEntry;
use crate::schema::PairSpec;
use crate::source::formats::image::header;
use crate::source::layouts::discover::DataFile;
use crate::source::storage::remote;

/// Extensions (lower case) of the files an image folder's images are.
const IMAGE_EXTENSIONS: [&str; 9] = ["png", "jpg", "jpeg", "bmp", "tif", "tiff", "webp", "gif", "jpe"];

/// What pairing found for one mask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pair {
    /// Its one image, as reports name it, and the image's header.
    Image(String, header::Header),
    /// Its one image, whose header cannot be read (the image's error).
    Unreadable(String),
    /// No image: the pattern looked for.
    Missing(String),
    /// Several images of its key.
    Ambiguous(Vec<String>),
}

/// The pairing of a run: per mask file, per image without a mask.
#[derive(Debug, Default)]
pub struct Pairing {
    /// The schema column that sets `pair_with`.
    column: usize,
    /// Masks by the name reports give them.
    pairs: HashMap<String, Pair>,
    /// Images without a mask, by name, with the mask looked for.
    orphans: BTreeMap<String, (PathBuf, String)>,
    /// Image folders that cannot be listed, images whose header is unreadable.
    pub errors: Vec<ErrorEntry>,
}

/// The directory PATH among `args` that `file` was found under, for
/// [`crate::scan::WorkUnit`]s checked apart from their run.
pub(crate) fn root_of(file: &Path, args: &[PathBuf]) -> Option<PathBuf> {
    args.iter()
        .filter(|d| file.starts_with(d) && is_folder(d))
        .max_by_key(|d| d.as_os_str().len())
        .cloned()
}

/// A mask of the run, keyed.
struct Mask<'a> {
    shown: &'a str,
    key: String,
    /// Index into the run's image folders.
    folder: usize,
}

/// One image folder: where to read it, how to name it, and whether its
/// images without a mask are reported (masks found by a directory search).
struct Folder {
    path: PathBuf,
    shown: String,
    /// The mask folder's name, for "looked for" messages.
    mask_shown: String,
    whole: bool,
}

impl Pairing {
    /// The pairing of `files` (found from the PATHs `args`), or `None` when
    /// no schema column sets `pair_with`. With `orphans`, images without a
    /// mask are looked for (`files` must then be every mask of the run).
    pub fn build(validator: &Validator, files: &[DataFile], args: &[PathBuf], orphans: bool) -> Option<Pairing> {
        let schema = validator.schema();
        let (column, spec) = schema
            .columns
            .iter()
            .enumerate()
            .find_map(|(i, c)| c.pair_with().map(|p| (i, p.clone())))?;
        let mut pairing = Pairing {
            column,
            ..Pairing::default()
        };
        let dirs: Vec<PathBuf> = args.iter().filter(|a| is_folder(a)).cloned().collect();
        let mut folders: Vec<Folder> = Vec::new();
        let mut masks: Vec<Mask> = Vec::new();
        for f in files.iter().filter(|f| f.label.is_none()) {
            if !has_image_extension(&f.path) {
                continue;
            }
            let (root, whole) = match root_of(&f.path, &dirs) {
                Some(r) => (r, true),
                None => (f.path.parent().map(Path::to_path_buf).unwrap_or_default(), false),
            };
            let Ok(rel) = f.path.strip_prefix(&root) else { continue };
            let Some(key) = key_of(rel, &spec.mask_suffix) else {
                continue;
            };
            let path = root.join(&spec.dir);
            // A URL's `..` is taken out before it is listed.
            let path = if remote::is_url(&path) {
                PathBuf::from(shown(&path))
            } else {
                path
            };
            let folder = match folders.iter().position(|d| d.path == path) {
                Some(i) => {
                    folders[i].whole |= whole;
                    i
                }
                None => {
                    folders.push(Folder {
                        shown: shown(&path),
                        mask_shown: shown(&root),
                        path,
                        whole,
                    });
                    folders.len() - 1
                }
            };
            masks.push(Mask {
                shown: &f.display,
                key,
                folder,
            });
        }
        // Each image folder listed once: key -> images (sorted by name).
        let listings: Vec<Result<Listing, String>> = folders.par_iter().map(|d| list_images(d, &spec)).collect();
        let mut wanted: Vec<(PathBuf, String)> = Vec::new();
        let mut seen: Vec<HashSet<&str>> = vec![HashSet::new(); folders.len()];
        for m in &masks {
            let Ok(listing) = &listings[m.folder] else { continue };
            seen[m.folder].insert(m.key.as_str());
            let pair = match listing.get(&m.key).map(Vec::as_slice) {
                None | Some([]) => Pair::Missing(format!(
                    "{}.*",
                    join_shown(&folders[m.folder].shown, &format!("{}{}", m.key, spec.image_suffix))
                )),
                Some([(path, name)]) => {
                    wanted.push((path.clone(), name.clone()));
                    Pair::Unreadable(name.clone())
                }
                Some(many) => Pair::Ambiguous(many.iter().map(|(_, n)| n.clone()).collect()),
            };
            pairing.pairs.insert(m.shown.to_string(), pair);
        }
        for (d, listing) in folders.iter().zip(&listings) {
            if let Err(message) = listing {
                pairing.errors.push(ErrorEntry {
                    file: Some(d.shown.clone()),
                    message: format!("pair_with: cannot list the image folder: {message}"),
                    unit: 0,
                });
            }
        }
        for (i, (d, listing)) in folders.iter().zip(&listings).enumerate() {
            let Ok(listing) = listing else { continue };
            if !d.whole || !orphans {
                continue;
            }
            for (key, images) in listing {
                if seen[i].contains(key.as_str()) {
                    continue;
                }
                let looked = format!("{}.*", join_shown(&d.mask_shown, &format!("{key}{}", spec.mask_suffix)));
                for (path, name) in images {
                    pairing.orphans.insert(name.clone(), (path.clone(), looked.clone()));
                }
            }
        }
        // The images' sizes, from their headers, in parallel.
        wanted.sort();
        wanted.dedup();
        let sizes: HashMap<String, Result<header::Header, String>> = wanted
            .par_iter()
            .map(|(path, name)| {
                // A dependency's panic on a hostile header is the image's error.
                let size =
                    crate::source::read::guarded(|| header::header_of_file(path).map_err(crate::error::ReadError::new));
                (name.clone(), size.map_err(|e| e.to_string()))
            })
            .collect();
        for pair in pairing.pairs.values_mut() {
            if let Pair::Unreadable(name) = pair
                && let Some(Ok(size)) = sizes.get(name.as_str())
            {
                *pair = Pair::Image(name.clone(), *size);
            }
        }
        let mut bad: Vec<(&String, &String)> = sizes
            .iter()
            .filter_map(|(n, r)| r.as_ref().err().map(|e| (n, e)))
            .collect();
        bad.sort();
        pairing.errors.extend(bad.into_iter().map(|(name, e)| ErrorEntry {
            file: Some(name.clone()),
            message: format!("pair_with: cannot read the image's size: {e}"),
            unit: 0,
        }));
        Some(pairing)
    }

    /// The images without a mask, as files of the run (they are named in
    /// the report); add them to the run's files before the scan.
    pub fn orphan_files(&self) -> Vec<DataFile> {
        self.orphans
            .iter()
            .map(|(name, (path, _))| DataFile {
                display: name.clone(),
                path: path.clone(),
                label: None,
                opens: None,
            })
            .collect()
    }

    /// What pairing found for the mask reports name `shown`.
    pub fn pair(&self, shown: &str) -> Option<&Pair> {
        self.pairs.get(shown)
    }

    /// Whether `shown` is an image without a mask.
    pub fn orphan(&self, shown: &str) -> bool {
        self.orphans.contains_key(shown)
    }

    /// What a cached result of file `shown` depends on besides the file.
    pub fn identity(&self, shown: &str) -> String {
        match (self.pairs.get(shown), self.orphans.get(shown)) {
            (Some(p), _) => format!("{p:?}"),
            (None, Some((_, looked))) => format!("orphan {looked}"),
            (None, None) => String::new(),
        }
    }

    /// The warning for a mask without an image.
    pub fn note(&self, shown: &str) -> Option<String> {
        match self.pairs.get(shown)? {
            Pair::Missing(looked) => Some(format!(
                "pair_with: no image for this mask (nothing matches {looked}); image-driven loaders (mmsegmentation, Pytorch-UNet) never read it"
            )),
            _ => None,
        }
    }

    /// Records an image without a mask (file `fi` of the run).
    pub(crate) fn check_orphan(&self, validator: &Validator, shown: &str, fi: usize, tally: &mut Tally) {
        let Some(slot) = validator.column_check(self.column).slots.pair_with else {
            return;
        };
        if let Some((_, looked)) = self.orphans.get(shown) {
            tally.hit(slot, fi, Spot::row(0), || {
                Value::Str(format!("no mask (looked for {looked})"))
            });
        }
    }
}

/// Records what pairing says of one decoded mask of `width` x `height`
/// (column `ci`, file `fi`): a size that differs from its image's, or
/// several images.
pub(crate) fn check_mask(
    validator: &Validator,
    ci: usize,
    pair: &Pair,
    (width, height): (u64, u64),
    fi: usize,
    row: u64,
    tally: &mut Tally,
) {
    let Some(slot) = validator.column_check(ci).slots.pair_with else {
        return;
    };
    match pair {
        Pair::Image(_, header) if header.size != (width, height) => {
            let (w, h) = header.size;
            let o = header.orientation;
            tally.hit(slot, fi, Spot::row(row), || {
                // A photo that only OpenCV's EXIF rotation makes fit.
                let rotated = if (5..=8).contains(&o) && (h, w) == (width, height) {
                    format!("; EXIF orientation {o}: {h}x{w} as OpenCV's IMREAD_COLOR reads it")
                } else {
                    String::new()
                };
                Value::Str(format!("{width}x{height} (image {w}x{h}{rotated})"))
            });
        }
        Pair::Ambiguous(images) => {
            tally.hit(slot, fi, Spot::row(row), || {
                Value::Str(format!("{} images: {}", images.len(), images.join(", ")))
            });
        }
        _ => {}
    }
}

/// Whether a PATH argument is a folder searched for masks: a directory, or
/// a URL that is not a glob and names no data file (a prefix, listed).
fn is_folder(p: &Path) -> bool {
    if remote::is_url(p) {
        let s = p.to_string_lossy();
        return !s.contains(['*', '?', '[']) && crate::source::Format::from_path(p).is_none();
    }
    p.is_dir()
}

fn has_image_extension(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// `rel` without its extension and `suffix`, `/`-separated; `None` when
/// the stem does not end with `suffix`.
fn key_of(rel: &Path, suffix: &str) -> Option<String> {
    let stem = rel.file_stem()?.to_string_lossy();
    let stem = stem.strip_suffix(suffix)?;
    let mut key = String::new();
    if let Some(parent) = rel.parent() {
        for c in parent.components() {
            key.push_str(&c.as_os_str().to_string_lossy());
            key.push('/');
        }
    }
    key.push_str(stem);
    Some(key)
}

/// A path as reports show it: `..` taken out lexically (`masks/../images`
/// is `images`).
fn shown(p: &Path) -> String {
    // A URL keeps its `scheme://`; the rest is a path.
    if remote::is_url(p) {
        let s = p.to_string_lossy();
        if let Some(i) = s.find("://") {
            return format!("{}{}", &s[..i + 3], shown(Path::new(&s[i + 3..])));
        }
    }
    let mut out: Vec<Component> = Vec::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    let s: PathBuf = out.iter().collect();
    let s = s.to_string_lossy().into_owned();
    if s.is_empty() { ".".into() } else { s }
}

fn join_shown(dir: &str, rel: &str) -> String {
    if dir == "." {
        rel.to_string()
    } else {
        format!("{dir}/{rel}")
    }
}

/// An image folder's images by key: (path, name in reports), sorted by name.
type Listing = HashMap<String, Vec<(PathBuf, String)>>;

/// The images of a folder by key, each key's images sorted by name.
fn list_images(d: &Folder, spec: &PairSpec) -> Result<Listing, String> {
    if remote::is_url(&d.path) {
        return list_objects(d, spec);
    }
    if !d.path.is_dir() {
        return Err(format!(
            "no folder {} (pair_with `{}` from the mask folder {})",
            d.shown, spec.dir, d.mask_shown
        ));
    }
    let mut out: Listing = HashMap::new();
    let walk = walkdir::WalkDir::new(&d.path)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    for entry in walk {
        let entry = entry.map_err(|e| e.to_string())?;
        if !entry.file_type().is_file() || !has_image_extension(entry.path()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(&d.path) else {
            continue;
        };
        let Some(key) = key_of(rel, &spec.image_suffix) else {
            continue;
        };
        let name = join_shown(&d.shown, &rel.to_string_lossy());
        out.entry(key).or_default().push((entry.path().to_path_buf(), name));
    }
    Ok(out)
}

/// [`list_images`] for a folder in storage: one listing of the prefix
/// (hidden keys skipped, as the local walk skips them).
fn list_objects(d: &Folder, spec: &PairSpec) -> Result<Listing, String> {
    let prefix = format!("{}/", d.path.to_string_lossy().trim_end_matches('/'));
    let objects = remote::list(&prefix)?;
    if objects.is_empty() {
        return Err(format!(
            "no folder {} (pair_with `{}` from the mask folder {})",
            d.shown, spec.dir, d.mask_shown
        ));
    }
    let mut out: Listing = HashMap::new();
    for (url, _) in objects {
        let Some(rel) = url.strip_prefix(&prefix) else { continue };
        if !has_image_extension(Path::new(rel)) {
            continue;
        }
        let Some(key) = key_of(Path::new(rel), &spec.image_suffix) else {
            continue;
        };
        let name = join_shown(&d.shown, rel);
        out.entry(key).or_default().push((PathBuf::from(&url), name));
    }
    for images in out.values_mut() {
        images.sort_by(|a, b| a.1.cmp(&b.1));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_names() {
        assert_eq!(key_of(Path::new("a/b.png"), ""), Some("a/b".into()));
        assert_eq!(key_of(Path::new("a/b.c.PNG"), ""), Some("a/b.c".into()));
        assert_eq!(
            key_of(
                Path::new("x/aachen_1_gtFine_labelTrainIds.png"),
                "_gtFine_labelTrainIds"
            ),
            Some("x/aachen_1".into())
        );
        assert_eq!(
            key_of(Path::new("x/aachen_1_gtFine_color.png"), "_gtFine_labelTrainIds"),
            None
        );
        assert_eq!(shown(Path::new("data/masks/../images")), "data/images");
        assert_eq!(shown(Path::new("masks/../../images")), "../images");
        assert_eq!(shown(Path::new("./masks/..")), ".");
        assert!(has_image_extension(Path::new("a.JPG")));
        assert!(!has_image_extension(Path::new("a.txt")));
    }
}
