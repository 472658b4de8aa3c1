// The profile store's schema (../shared/DESIGN.md §2, db/store.h): the migrations that build it, in
// order.
//
// Contract:
// - migrations()[k] takes a store at schema version k (PRAGMA user_version) to k + 1; version 0 is
//   an empty SQLite file. Each script is constant SQL, ends by setting user_version to k + 1,
//   and is run in one transaction, so a store is always at exactly one version.
// - A released migration is never edited: a change to the schema is a new migration appended here
//   (and Store::kSchemaVersion raised to migrations().size()).
// - Migration 0 → 1 stamps PRAGMA application_id = kApplicationId, the mark by which a HAP store
//   is told apart from another application's SQLite file.
#pragma once

#include <cstdint>
#include <span>

namespace hap::db::schema {

// "HAPS" in ASCII, big-endian: PRAGMA application_id of every HAP profile store.
inline constexpr int32_t kApplicationId = 0x48415053;

std::span<const char* const> migrations();

}  // namespace hap::db::schema
