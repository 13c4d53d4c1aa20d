import Crypto
import Foundation
import RetractModel

/// One numbered file of sql/, compiled into the binary.
package struct Migration: Hashable, Sendable {
    package var version: Int
    /// The file's name, such as `0001_ledger.sql`.
    package var name: String
    package var sql: String

    package init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// SHA-256 of the SQL: an applied migration whose file changed afterwards
    /// is a different schema, and the runner says so.
    package var checksum: [UInt8] { Array(SHA256.hash(data: Data(sql.utf8))) }

    /// Every migration this binary knows, in order. A new file in sql/ gets a
    /// line here; a test checks that the two agree.
    package static let all: [Migration] = [
        Migration(version: 1, name: "0001_ledger.sql", sql: String(decoding: PackageResources._001_ledger_sql, as: UTF8.self)),
        Migration(
            version: 2, name: "0002_retraction_failures.sql",
            sql: String(decoding: PackageResources._002_retraction_failures_sql, as: UTF8.self)),
        Migration(version: 3, name: "0003_http_api.sql", sql: String(decoding: PackageResources._003_http_api_sql, as: UTF8.self)),
        Migration(version: 4, name: "0004_fcm.sql", sql: String(decoding: PackageResources._004_fcm_sql, as: UTF8.self)),
        Migration(
            version: 5, name: "0005_reliability.sql", sql: String(decoding: PackageResources._005_reliability_sql, as: UTF8.self)),
        Migration(
            version: 6, name: "0006_delivery_modes.sql",
            sql: String(decoding: PackageResources._006_delivery_modes_sql, as: UTF8.self)),
        Migration(
            version: 7, name: "0007_delivery_labels.sql", sql: String(decoding: PackageResources._007_delivery_labels_sql, as: UTF8.self)),
        Migration(
            version: 8, name: "0008_work_notifications.sql",
            sql: String(decoding: PackageResources._008_work_notifications_sql, as: UTF8.self)),
        Migration(version: 9, name: "0009_webhooks.sql", sql: String(decoding: PackageResources._009_webhooks_sql, as: UTF8.self)),
        Migration(version: 10, name: "0010_console.sql", sql: String(decoding: PackageResources._010_console_sql, as: UTF8.self)),
        Migration(
            version: 11, name: "0011_console_sessions.sql",
            sql: String(decoding: PackageResources._011_console_sessions_sql, as: UTF8.self)),
        Migration(
            version: 12, name: "0012_retraction_history.sql",
            sql: String(decoding: PackageResources._012_retraction_history_sql, as: UTF8.self)),
        Migration(
            version: 13, name: "0013_retraction_days.sql",
            sql: String(decoding: PackageResources._013_retraction_days_sql, as: UTF8.self)),
        Migration(
            version: 14, name: "0014_device_index_by_day.sql",
            sql: String(decoding: PackageResources._014_device_index_by_day_sql, as: UTF8.self)),
        Migration(
            version: 15, name: "0015_notifications.sql", sql: String(decoding: PackageResources._015_notifications_sql, as: UTF8.self)),
        Migration(
            version: 16, name: "0016_selector_taken_references.sql",
            sql: String(decoding: PackageResources._016_selector_taken_references_sql, as: UTF8.self)),
        Migration(
            version: 17, name: "0017_device_feed.sql", sql: String(decoding: PackageResources._017_device_feed_sql, as: UTF8.self)),
        Migration(version: 18, name: "0018_cancel.sql", sql: String(decoding: PackageResources._018_cancel_sql, as: UTF8.self)),
        Migration(
            version: 19, name: "0019_retraction_text.sql", sql: String(decoding: PackageResources._019_retraction_text_sql, as: UTF8.self)),
        Migration(version: 20, name: "0020_approval.sql", sql: String(decoding: PackageResources._020_approval_sql, as: UTF8.self)),
        Migration(version: 21, name: "0021_edits.sql", sql: String(decoding: PackageResources._021_edits_sql, as: UTF8.self)),
        Migration(
            version: 22, name: "0022_device_page.sql", sql: String(decoding: PackageResources._022_device_page_sql, as: UTF8.self)),
        Migration(
            version: 23, name: "0023_quiet_carriers.sql",
            sql: String(decoding: PackageResources._023_quiet_carriers_sql, as: UTF8.self)),
        Migration(version: 24, name: "0024_accounts.sql", sql: String(decoding: PackageResources._024_accounts_sql, as: UTF8.self)),
        Migration(version: 25, name: "0025_reads.sql", sql: String(decoding: PackageResources._025_reads_sql, as: UTF8.self)),
    ]
}
