// Package archive keeps a copy of a shard before the shard manager drops
// it: the shard's rows as one Parquet object, beside a manifest (JSON: row
// count, time range, schema, checksums) in a Target, a directory
// (file:///DIR) or an S3 bucket (s3://bucket/prefix, package archive/s3).
//
// An archive is written in three steps, and the manifest is the commit
// point:
//
//	export  page through the table's partitions (store.PartitionLister)
//	        and scan each one (store.Data's Scan), writing Parquet rows to
//	        a local file as they come, a row group of about
//	        Options.RowGroupBytes at a time, so no shard is ever held in
//	        memory, while hashing every row (the rows checksum) and every
//	        byte written (the object checksum); then Put the file as the
//	        object
//	verify  read the object back: its bytes must hash to the object
//	        checksum, and its rows must be as many as the table's and hash
//	        to the same rows checksum
//	commit  write the manifest, marked verified
//
// Only a shard with a verified manifest whose object is there may be
// dropped (Archiver.ArchiveShard returns nil); anything else holds the
// drop, and the shard manager says why. An object without a verified
// manifest (an archive killed half-way) is written again from the table,
// so a pass that resumes an interrupted archive needs nothing but the
// table.
//
// A shard archived and dropped can be restored (Archiver.Restore) as a
// read-only table of its old name, recorded in ebb_meta until it is
// released; the shard manager holds the drop of a restored shard.
package archive
